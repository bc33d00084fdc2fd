"""The padding rows of the packed metadata tables are the reference writer's: valid structs
whose fields are all null, nested structs (isolation window, activation) valid as well, the
index null."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mzpeak_dask import convert

from ..conftest import DATA, INLINE


def _validity(array: pa.Array, path: str = "") -> dict[str, list[bool]]:
    """Per nested field path: which rows are valid (lists are leaves)."""
    out = {path or "(row)": [v.is_valid for v in array]}
    if pa.types.is_struct(array.type):
        for k, f in enumerate(array.type):
            out |= _validity(array.field(k), f"{path}.{f.name}" if path else f.name)
    return out


def _padding_rows(path: Path, table: str) -> dict[str, list[bool]]:
    with zipfile.ZipFile(path) as z:
        data = pq.read_table(pa.BufferReader(z.read("spectra_metadata.parquet")))
    column = data.column(table).combine_chunks()
    key = column.field(0)
    padding = column.filter(key.is_null())
    assert len(padding)
    return _validity(padding)


@pytest.mark.parametrize("table", ["precursor", "selected_ion"])
def test_padding_rows_equal_the_reference_writer(tmp_path: Path, table: str) -> None:
    ours = tmp_path / "small.mzpeak"
    convert(DATA / "mzdata" / "small.mzML", ours, cluster=INLINE)
    got = _padding_rows(ours, table)
    want = _padding_rows(DATA / "HUPO-PSI_mzPeak" / "small.mzpeak", table)
    assert got.keys() >= want.keys()
    for field in want:  # same rows (14 padding rows of 48 in both)
        assert got[field] == want[field], field
    assert all(got["(row)"])  # valid structs, not null ones
