"""Data-processing references of spectra and chromatograms follow the specification's
``data_processing_id`` rule: null when the item follows the run's default (as in the reference
archives), the id when it departs from it; every id written names an entry of the file-level
data-processing list."""

from __future__ import annotations

from pathlib import Path

import pytest

from mzpeak_dask import convert, open_archive

from ..conftest import DATA, INLINE


def _refs(path: Path, entity: str) -> tuple[list, dict]:
    with open_archive(path) as archive:
        main = archive.spectra if entity == "spectrum" else archive.chromatograms
        refs = main.column("data_processing_ref").to_pylist()
        return refs, archive.file_metadata


@pytest.mark.parametrize(
    ("source", "spectra", "chromatograms"),
    [
        # OpenMS: spectrum 0 names dp_sp_0, which is also the spectrum list's default
        ("MS3_nonHierarchical.mzML", [None] * 229, [None]),
        # two spectra name their own processing, different from the default dp_sp_0
        ("MzMLFile_1.mzML", [None, None, "dp_sp_2", "dp_sp_3"], [None, None]),
    ],
)
def test_references_are_null_unless_they_depart_from_the_default(
    tmp_path: Path, source: str, spectra: list, chromatograms: list
) -> None:
    output = tmp_path / "run.mzpeak"
    convert(DATA / "openms" / source, output, cluster=INLINE)
    refs, meta = _refs(output, "spectrum")
    assert refs == spectra
    assert _refs(output, "chromatogram")[0] == chromatograms
    ids = {dp["id"] for dp in meta["data_processing_method_list"]}
    assert meta["run"]["default_data_processing_id"] in ids
    assert {r for r in refs if r is not None} <= ids


def test_reference_archives_write_null_references() -> None:
    """What the comparison above is with: the reference writer's archives."""
    refs, meta = _refs(DATA / "HUPO-PSI_mzPeak" / "small.mzpeak", "spectrum")
    assert refs == [None] * 48
    assert meta["run"]["default_data_processing_id"] == "pwiz_Reader_Thermo_conversion"
