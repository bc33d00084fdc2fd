"""``--chunk-encoding basic`` follows the format's rule (format document §5.4): a basic row stores
the values of points 1…n−1, the start point left out, even when the chunk's first point is a
null-marked one; a chunk's values are one fewer than its intensities. Profile runs whose chunks
begin with the second null of a null pair convert, and read back as pyteomics reads the source
(the head rebuilt as the null it was)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from mzpeak_dask import ConvertOptions, convert, open_archive

from ..conftest import DATA, INLINE
from ..helpers import oracle
from ..test_roundtrip import check_metadata, check_signal

BASIC = "MS:1000576"


def _chunks(path: Path):
    with zipfile.ZipFile(path) as archive:
        table = pq.read_table(io.BytesIO(archive.read("spectra_data.parquet")))
    return table.column("chunk").combine_chunks()


@pytest.mark.parametrize("name", ["mzdata/small.mzML", "pyteomics/test.mzML"])
def test_basic_rows_hold_points_after_the_start(name: str, tmp_path: Path) -> None:
    source = DATA / name
    out = tmp_path / "basic.mzpeak"
    convert(source, out, ConvertOptions(layout="chunked", chunk_encoding="basic"), cluster=INLINE)
    chunks = _chunks(out)
    encodings = chunks.field("chunk_encoding").to_numpy(zero_copy_only=False)
    assert set(encodings) == {BASIC}
    values = pc.list_value_length(chunks.field("mz_chunk_values")).to_numpy()
    points = pc.list_value_length(chunks.field("intensity")).to_numpy()
    assert np.array_equal(values, points - 1)  # the format's rule, every row
    # rows that begin with a null-marked point exist (what the rule is about) ...
    first_intensity = pc.list_element(chunks.field("intensity"), 0)
    leading_nulls = int(first_intensity.null_count)
    assert leading_nulls > 0
    # ... and their start is the first non-null m/z, which is their first stored value
    flat_starts = chunks.field("mz_chunk_start").to_numpy(zero_copy_only=False)
    heads = pc.list_element(chunks.field("mz_chunk_values"), 0).to_numpy(zero_copy_only=False)
    led = np.asarray(first_intensity.is_null())
    assert np.array_equal(flat_starts[led], heads[led])
    # the archive reads back as pyteomics reads the source
    expected = oracle.spectra(source, tmp_path)
    with open_archive(out) as archive:
        assert len(archive) == len(expected)
        for k, want in enumerate(expected):
            check_metadata(want, archive[k], f"{name} spectrum {k}")
            check_signal(want["arrays"], archive[k].arrays, f"{name} spectrum {k}")
