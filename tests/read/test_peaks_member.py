"""What ``spectra_peaks`` holds, as ``info`` reports it and ``validate`` judges it: peak lists
beside signal in spectra_data (the specification's ``peaks`` kind), or spectra stored only
there (``--centroids peaks``), which readers of spectra_data return without arrays."""

from __future__ import annotations

from pathlib import Path

import pytest

from mzpeak_dask import ConvertOptions, convert, open_archive
from mzpeak_dask.read.summary import format_summary, summarize
from mzpeak_dask.read.validate import ERROR, WARNING, validate

from ..conftest import DATA, INLINE

SMALL = DATA / "mzdata" / "small.mzML"


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("peaks")
    variants = {
        "default": ConvertOptions(),
        "peak_lists": ConvertOptions(peaks=True),
        "centroids_in_peaks": ConvertOptions(centroids="peaks"),
    }
    out = {}
    for name, options in variants.items():
        out[name] = folder / f"{name}.mzpeak"
        convert(SMALL, out[name], options, cluster=INLINE)
    return out


def _peak_warnings(path: Path) -> list:
    return [p for p in validate(path) if "spectra_peaks" in p.where]


def test_default_archive_has_no_peaks_member(archives) -> None:
    with open_archive(archives["default"]) as archive:
        assert summarize(archive)["peaks"] is None
    assert not _peak_warnings(archives["default"])


def test_peak_lists_beside_profiles_are_what_the_member_is_for(archives) -> None:
    with open_archive(archives["peak_lists"]) as archive:
        summary = summarize(archive)
    assert summary["peaks"] == {"peak_lists": 14, "only_in_peaks": 0}  # the 14 MS1 profiles
    assert "14 peak lists beside spectra_data signal" in format_summary(summary)
    assert not _peak_warnings(archives["peak_lists"])
    with open_archive(DATA / "HUPO-PSI_mzPeak" / "small.chunked.mzpeak") as reference:
        assert summarize(reference)["peaks"] == {"peak_lists": 14, "only_in_peaks": 0}


def test_centroid_spectra_only_in_peaks_are_reported(archives) -> None:
    with open_archive(archives["centroids_in_peaks"]) as archive:
        summary = summarize(archive)
        assert len(archive[2]) == 485  # still read, from spectra_peaks
    assert summary["peaks"] == {"peak_lists": 0, "only_in_peaks": 34}  # the MS2 centroids
    assert "34 spectra only here" in format_summary(summary)
    problems = validate(archives["centroids_in_peaks"])
    warnings = [p for p in problems if "spectra_peaks" in p.where]
    assert [p.severity for p in warnings] == [WARNING]
    assert "34 spectra (the first: index 2) have signal only here" in warnings[0].message
    assert not [p for p in problems if p.severity == ERROR]


def test_no_peak_list_picked_means_no_peaks_member(tmp_path: Path) -> None:
    """--peaks on profile spectra where no peak is picked writes no spectra_peaks member (a
    Parquet file without a row group, which the TypeScript reader rejects)."""
    tiny = DATA / "pyteomics" / "tiny.pwiz.1.1.mzML"  # its profile spectra hold no peak
    output = tmp_path / "tiny.mzpeak"
    convert(tiny, output, ConvertOptions(peaks=True), cluster=INLINE)
    with open_archive(output) as archive:
        assert archive.member("spectrum", "peaks") is None
        assert sum(len(s.mz) for s in archive) == 40
