"""The reference implementation's archives read with the counts the format document lists
(section 7.2), and give the points of their source, small.mzML."""

from __future__ import annotations

import numpy as np
import pytest
from pyteomics import mzml

from mzpeak_dask import open_archive

from ..conftest import DATA

REFERENCE = DATA / "HUPO-PSI_mzPeak"
SMALL = [
    REFERENCE / "small.mzpeak",
    REFERENCE / "small.chunked.mzpeak",
    REFERENCE / "small.unpacked.mzpeak",
    REFERENCE / "small.numpress.mzpeak",
    DATA / "HUPO-PSI_mzpeakts" / "small.numpress.mzpeak",
]
LOSSY = {"small.numpress.mzpeak"}  # Numpress linear m/z + SLOF intensities
POINTS = {0: 13_589, 1: 18_177, 2: 485, 4: 837, 7: 10_329, 41: 22_554, 47: 636}


@pytest.fixture(scope="module")
def source() -> list[dict]:
    with mzml.MzML(str(DATA / "mzdata" / "small.mzML")) as reader:
        return list(reader)


@pytest.mark.parametrize("path", SMALL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_small_archives(path, source) -> None:
    with open_archive(path) as archive:
        assert len(archive) == 48
        points = [len(s) for s in archive]
        assert sum(points) == 243_054
        assert {i: points[i] for i in POINTS} == POINTS
        assert archive[4].representation == "MS:1000127"
        assert len(archive.table("scan")) == 48
        assert len(archive.table("precursor")) == 34
        assert len(archive.table("selected_ion")) == 34
        assert archive.chromatogram_count == 1
        assert len(archive.read_chromatogram(0).time) == 48
        if path.name in LOSSY:
            with open_archive(REFERENCE / "small.mzpeak") as exact:
                for spectrum, want in zip(archive, exact, strict=True):
                    _check_numpress(spectrum, want)
        else:
            for spectrum, want in zip(archive, source, strict=True):
                _check_points(spectrum, want)


def _check_points(spectrum, want: dict) -> None:
    src_nz = want["intensity array"] != 0
    got_nz = spectrum.intensity != 0
    assert src_nz.sum() == got_nz.sum(), spectrum.index
    assert np.array_equal(want["m/z array"][src_nz], spectrum.mz[got_nz])
    assert np.array_equal(
        want["intensity array"][src_nz], spectrum.intensity[got_nz].astype(np.float64)
    )
    zeros = spectrum.mz[~got_nz]
    if zeros.size:
        src_zeros = want["m/z array"][~src_nz]
        at = np.clip(np.searchsorted(src_zeros, zeros), 1, len(src_zeros) - 1)
        nearest = np.minimum(np.abs(src_zeros[at] - zeros), np.abs(src_zeros[at - 1] - zeros))
        assert (nearest / zeros * 1e6).max() < 0.02


def _check_numpress(spectrum, exact) -> None:
    """Point for point against the lossless reference archive of the same run: Numpress
    linear m/z within 1e-6; SLOF intensities within 0.5 / fixed point relative (the fixed
    point is 65535 / ln(max + 1), above 3000 here), which rounds intensities below ~1e-3 to 0."""
    assert len(spectrum) == len(exact)
    nonzero = exact.intensity != 0  # zero points' m/z are rebuilt differently by each writer
    assert np.max(np.abs(spectrum.mz - exact.mz)[nonzero]) < 1e-6
    assert np.max(np.abs(spectrum.mz - exact.mz)) < 1e-4
    big = exact.intensity >= 1.0
    relative = np.abs(spectrum.intensity[big] - exact.intensity[big]) / exact.intensity[big]
    assert relative.max() < 5e-4
    assert np.all(np.abs(spectrum.intensity[~big] - exact.intensity[~big]) < 1e-3)


def test_numpress_single_value_chunks_decode() -> None:
    """Both numpress builds hold 12-byte single-value buffers that pynumpress cannot decode."""
    for path in SMALL[3:]:
        with open_archive(path) as archive:
            signal = archive.signal("spectrum")
            table = signal.file.read(use_threads=False).column("chunk").combine_chunks()
            lengths = [len(b) for b in table.field("mz_numpress_linear_bytes").to_pylist() if b]
            assert 12 in lengths
            assert sum(len(s) for s in archive) == 243_054


def test_has_uv() -> None:
    with open_archive(REFERENCE / "has_uv.mzpeak") as archive:
        assert len(archive) == 212
        assert archive.wavelength_spectrum_count == 520
        assert archive.chromatogram_count == 2
        uv = archive.read_wavelength_spectrum(0)
        assert len(uv.arrays["wavelength array"]) > 0
        assert sum(len(s) for s in archive) == 24_310
        chromatograms = [archive.read_chromatogram(i) for i in range(2)]
        assert sum(len(c.time) for c in chromatograms) == 738


def test_get_by_id_and_metadata() -> None:
    with open_archive(REFERENCE / "small.mzpeak") as archive:
        spectrum = archive.get_by_id("controllerType=0 controllerNumber=1 scan=3")
        assert spectrum.index == 2
        assert spectrum.ms_level == 2
        precursor = spectrum.precursors[0]
        assert precursor.precursor_index == 1
        # the reference stores absolute bounds in the offset columns; read back as offsets
        assert precursor.isolation_window["lower_offset"] == pytest.approx(1.0)
        assert archive.file_metadata["run"]["id"] == "small"
        frame = archive.table("spectrum", pandas=True)
        assert len(frame) == 48
