"""The archive this package writes follows the format document: members, index, footers,
Parquet settings, and the unpacked directory form."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyteomics import mzml

from mzpeak_dask import ConvertOptions, convert, open_archive

from ..conftest import BUNDLED, DATA, INLINE

SMALL = BUNDLED / "small.mzML"
FILE_KEYS = {
    "file_description",
    "instrument_configuration_list",
    "data_processing_method_list",
    "software_list",
    "sample_list",
    "run",
}


@pytest.fixture(scope="module")
def archive_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("conformance") / "small.mzpeak"
    convert(SMALL, path, cluster=INLINE)
    return path


def _parquet(z: zipfile.ZipFile, name: str) -> pq.ParquetFile:
    return pq.ParquetFile(pa.BufferReader(z.read(name)))


def test_zip_members_stored_in_order_index_last(archive_path: Path) -> None:
    with zipfile.ZipFile(archive_path) as z:
        infos = z.infolist()
        assert [i.filename for i in infos] == [
            "spectra_data.parquet",  # every spectrum, centroid ones included
            "spectra_metadata.parquet",
            "chromatograms_metadata.parquet",
            "chromatograms_data.parquet",
            "mzpeak_index.json",
        ]
        assert all(i.compress_type == zipfile.ZIP_STORED for i in infos)
        index = json.loads(z.read("mzpeak_index.json"))
    assert index["metadata"]["version"] == "0.9.0"
    assert {cv["id"] for cv in index["metadata"]["cv_list"]} == {"MS", "UO"}
    assert all(cv["version"] for cv in index["metadata"]["cv_list"])
    kinds = {(f["entity_type"], f["data_kind"]) for f in index["files"]}
    assert ("spectrum", "data arrays") in kinds and ("chromatogram", "metadata") in kinds
    assert FILE_KEYS <= set(index["metadata"])


def test_footers_and_writer_settings(archive_path: Path) -> None:
    with zipfile.ZipFile(archive_path) as z:
        data = _parquet(z, "spectra_data.parquet")
        meta = _parquet(z, "spectra_metadata.parquet")
        chrom = _parquet(z, "chromatograms_data.parquet")
    kv = data.metadata.metadata
    array_index = json.loads(kv[b"spectrum_array_index"])
    assert array_index["prefix"] == "point"
    assert [e["path"] for e in array_index["entries"]] == ["point.mz", "point.intensity"]
    assert array_index["entries"][0]["sorting_rank"] == 0
    assert array_index["entries"][0]["transform"] == "MS:1003901"
    assert array_index["entries"][1]["transform"] == "MS:1003902"
    assert kv[b"spectrum_count"] == b"48"
    assert int(kv[b"spectrum_data_point_count"]) == data.metadata.num_rows
    assert data.metadata.num_rows == 243_054  # as many rows as the reference's small.mzpeak
    assert data.schema_arrow.field("point").type.field(0).name == "spectrum_index"
    md = data.metadata
    assert md.num_row_groups > 1  # sized for random access
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        assert rg.sorting_columns == (pq.SortingColumn(0),)
        index_column, mz_column = rg.column(0), rg.column(1)
        assert index_column.has_column_index and index_column.has_offset_index
        assert "DELTA_BINARY_PACKED" in index_column.encodings
        assert "BYTE_STREAM_SPLIT" in mz_column.encodings
        assert "RLE_DICTIONARY" not in mz_column.encodings
        assert index_column.compression == "ZSTD"
        assert index_column.statistics.has_min_max
    meta_kv = meta.metadata.metadata
    assert {k.decode() for k in meta_kv} >= FILE_KEYS | {
        "spectrum_count",
        "spectrum_data_point_count",
    }
    source_files = json.loads(meta_kv[b"file_description"])["source_files"]
    ours = source_files[-1]
    assert ours["name"] == "small.mzML"
    assert {p["accession"] for p in ours["parameters"]} >= {"MS:1003151", "MS:1000584"}
    assert FILE_KEYS <= {k.decode() for k in chrom.metadata.metadata}
    assert b"chromatogram_array_index" in chrom.metadata.metadata


def test_row_groups_hold_whole_spectra(archive_path: Path) -> None:
    with zipfile.ZipFile(archive_path) as z:
        md = _parquet(z, "spectra_data.parquet").metadata
    bounds = [
        (md.row_group(i).column(0).statistics.min, md.row_group(i).column(0).statistics.max)
        for i in range(md.num_row_groups)
    ]
    for (_, high), (low, _) in zip(bounds, bounds[1:], strict=False):
        assert low > high  # no spectrum spans two row groups


def test_packed_metadata_padding(archive_path: Path) -> None:
    with zipfile.ZipFile(archive_path) as z:
        table = _parquet(z, "spectra_metadata.parquet").read()
    precursor = table.column("precursor").combine_chunks()
    assert precursor.null_count == 0  # padding rows are valid structs with null fields
    assert precursor.field("source_index").null_count == 48 - 34


def test_unpacked_directory_form(tmp_path: Path) -> None:
    output = tmp_path / "small.mzpeak"
    convert(SMALL, output, ConvertOptions(unpacked=True), cluster=INLINE)
    assert output.is_dir()
    assert (output / "mzpeak_index.json").is_file()
    with (
        open_archive(output) as archive,
        open_archive(DATA / "HUPO-PSI_mzPeak" / "small.mzpeak") as reference,
    ):
        assert len(archive) == len(reference)
        for ours, theirs in zip(archive, reference, strict=True):
            assert len(ours) == len(theirs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.mzpeak"]


def test_size_of_small_below_two_megabytes(archive_path: Path) -> None:
    assert archive_path.stat().st_size <= 2_000_000  # the reference writes 2,215,870 bytes


def test_chromatogram_only_run_has_no_spectrum_data_member(tmp_path: Path) -> None:
    """A run without spectra gets no spectra_data member rather than a Parquet file without a
    row group (which the TypeScript reader rejects); spectra_metadata stays, with no rows."""
    from mzpeak_dask.read.validate import ERROR, validate

    output = tmp_path / "srm.mzpeak"
    convert(DATA / "openms" / "Spyogenes.chrom.mzML", output, cluster=INLINE)
    with zipfile.ZipFile(output) as z:
        names = z.namelist()
        index = json.loads(z.read("mzpeak_index.json"))
        row_groups = {n: _parquet(z, n).metadata.num_row_groups for n in names[:-1]}
    assert names == [
        "spectra_metadata.parquet",
        "chromatograms_metadata.parquet",
        "chromatograms_data.parquet",
        "mzpeak_index.json",
    ]
    assert [f["name"] for f in index["files"]] == names[:-1]
    assert row_groups["chromatograms_data.parquet"] >= 1
    with open_archive(output) as archive:
        assert len(archive) == 0 and archive.chromatogram_count == 106
        assert len(archive.read_chromatogram(105).intensity) > 0
    assert not [p for p in validate(output) if p.severity == ERROR]


@pytest.mark.parametrize("layout", ["point", "chunked"])
def test_chromatogram_times_are_stored_in_minutes(tmp_path: Path, layout: str) -> None:
    """diaPASEF's chromatograms have time arrays in seconds: they are stored in minutes, the
    unit of the specification's time columns (and of the reference writer)."""
    output = tmp_path / "dia.mzpeak"
    convert(
        DATA / "mzdata" / "diaPASEF.mzML", output, ConvertOptions(layout=layout), cluster=INLINE
    )
    with zipfile.ZipFile(output) as z:
        kv = _parquet(z, "chromatograms_data.parquet").metadata.metadata
    entries = json.loads(kv[b"chromatogram_array_index"])["entries"]
    time_units = {e["unit"] for e in entries if e["array_type"] == "MS:1000595"}
    assert time_units == {"UO:0000031"}
    with mzml.MzML(str(DATA / "mzdata" / "diaPASEF.mzML")) as reader:
        seconds = next(reader.iterfind("chromatogram"))
    with open_archive(output) as archive:
        times = archive.read_chromatogram(0).time
    assert np.array_equal(times, seconds["time array"] / 60)  # 64.4 to 64.5 minutes
