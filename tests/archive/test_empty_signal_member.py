"""A run whose only chromatogram has no points: its ``chromatograms_data.parquet`` holds one row
group of zero rows whose column chunks carry statistics, in the point layout whatever the
archive's layout (there is nothing to chunk), instead of a Parquet file without a row group.

Checked by hand against HUPO-PSI/mzpeakts (1634269) and the Python reader of HUPO-PSI/mzPeak
(1f18184), both reading the chromatogram as metadata without arrays: the TypeScript reader
rejects a file without a row group ("Empty Parquet file"); the Python reader fails on a row
group without statistics (``'NoneType' object has no attribute 'has_min_max'``), and on an
item with no row in a chunked member (it falls back to reading a ``point`` column); without the
member it has nothing to read the chromatogram's arrays from (``read_chromatogram`` fails)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mzpeak_dask import open_archive

from ..helpers.cli import run_cli
from ..helpers.generated_runs import generated_mzml

MEMBER = "chromatograms_data.parquet"


@pytest.mark.parametrize("layout", ["point", "chunked"])
def test_an_empty_chromatogram_gets_a_row_group_of_no_rows(tmp_path: Path, layout: str) -> None:
    source = generated_mzml(tmp_path / "empty_tic.mzML", spectra=3, chromatograms=[np.array([])])
    output = tmp_path / "empty_tic.mzpeak"
    converted = run_cli(
        "convert", "--cluster", "inline", "-q", "--layout", layout, str(source), str(output)
    )
    assert converted.returncode == 0, converted.stderr
    with zipfile.ZipFile(output) as z:
        assert MEMBER in z.namelist()
        md = pq.ParquetFile(pa.BufferReader(z.read(MEMBER))).metadata
    assert md.num_row_groups >= 1 and md.num_rows == 0
    assert md.schema.to_arrow_schema().names == ["point"]
    for j in range(md.num_columns):
        statistics = md.row_group(0).column(j).statistics
        assert statistics is not None and statistics.null_count == 0
    assert md.metadata[b"chromatogram_data_point_count"] == b"0"
    with open_archive(output) as archive:
        assert len(archive) == 3 and all(len(s.mz) == 20 for s in archive)
        assert archive.chromatogram_count == 1
        chromatogram = archive.read_chromatogram(0)
        assert chromatogram.id == "TIC"
        assert all(len(values) == 0 for values in chromatogram.arrays.values())
    checked = run_cli("validate", str(output))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert ": error: " not in checked.stdout
