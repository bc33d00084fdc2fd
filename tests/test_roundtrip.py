"""Every real input under ../shared/data converts, and reads back equal to what pyteomics decodes
from the source: non-zero points bit for bit, reconstructed zeros within 0.02 ppm, and the
spectrum metadata (id, MS level, retention time, polarity, representation, precursors)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mzpeak_dask import ConvertOptions, convert, open_archive

from .conftest import INLINE, input_files
from .helpers import oracle

pytestmark = pytest.mark.slow  # every real input converted and read back

PPM_TOLERANCE = 0.02
WAVELENGTH = "wavelength array"


def _close(a, b, rel: float = 1e-9) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(float(a) - float(b)) <= rel * max(1.0, abs(float(a)))


def check_signal(expected: dict[str, np.ndarray], got: dict[str, np.ndarray], where: str) -> None:
    main = WAVELENGTH if WAVELENGTH in expected else "m/z array"
    if main not in expected:
        assert not got.get(main, np.zeros(0)).size, where
        return
    empty = np.zeros(0)
    src_main, got_main = expected[main], got.get(main, empty)
    src_int = expected.get("intensity array")
    got_int = got.get("intensity array", empty)
    if src_int is None or len(src_int) != len(src_main):
        src_nz, got_nz = np.ones(len(src_main), bool), np.ones(len(got_main), bool)
    else:
        src_nz, got_nz = src_int != 0, got_int != 0
    assert src_nz.sum() == got_nz.sum(), f"{where}: non-zero point count"
    for name, values in expected.items():
        assert name in got or not len(values), f"{where}: array {name!r} missing"
        ours = got.get(name, empty)
        if len(values) == len(src_main) and len(ours) == len(got_main):
            values, ours = values[src_nz], ours[got_nz]
        assert np.array_equal(values.astype(np.float64), ours.astype(np.float64), equal_nan=True), (
            f"{where}: {name} differs"
        )
    zeros = got_main[~got_nz]
    if zeros.size:
        src_zeros = np.sort(src_main[~src_nz])
        at = np.clip(np.searchsorted(src_zeros, zeros), 1, len(src_zeros) - 1)
        nearest = np.minimum(np.abs(src_zeros[at] - zeros), np.abs(src_zeros[at - 1] - zeros))
        scale = np.where(zeros == 0, 1e6, np.abs(zeros))  # a point at m/z 0 must be exact
        assert (nearest / scale * 1e6).max() <= PPM_TOLERANCE, f"{where}: zero reconstruction"


def check_metadata(expected: dict, spectrum, where: str) -> None:
    assert spectrum.id == expected["id"], where
    if expected["ms_level"] is not None:
        assert spectrum.ms_level == expected["ms_level"], where
    assert _close(spectrum.time, expected["time"]), f"{where}: time"
    if expected["polarity"] is not None:
        assert spectrum.polarity == expected["polarity"], where
    if expected["representation"] is not None:
        assert spectrum.representation == expected["representation"], where
    assert len(spectrum.precursors) == len(expected["precursors"]), f"{where}: precursors"
    for want, got in zip(expected["precursors"], spectrum.precursors, strict=True):
        assert _close(got.mz, want["mz"]), f"{where}: precursor m/z"
        assert got.charge == want["charge"], f"{where}: charge"
        if want["target"] is not None:
            window = got.isolation_window
            assert _close(window["target"], want["target"]), f"{where}: isolation target"
            assert _close(window["lower_offset"], want["lower"]), f"{where}: lower offset"
            assert _close(window["upper_offset"], want["upper"]), f"{where}: upper offset"
        if want["activation"] is not None:
            accessions = {
                p.accession or p.name for p in got.activation if p.accession != "MS:1000045"
            }
            assert accessions == want["activation"], f"{where}: activation"
        if want["collision_energy"] is not None:
            energy = next(p.value for p in got.activation if p.accession == "MS:1000045")
            assert _close(energy, want["collision_energy"]), f"{where}: collision energy"


@pytest.mark.parametrize("path", input_files(), ids=lambda p: p.name)
def test_round_trip(path: Path, tmp_path: Path) -> None:
    output = tmp_path / "run.mzpeak"
    result = convert(path, output, ConvertOptions(), cluster=INLINE)
    expected = oracle.spectra(path, tmp_path)
    is_uv = [WAVELENGTH in s["arrays"] and "m/z array" not in s["arrays"] for s in expected]
    ms = [s for s, uv in zip(expected, is_uv, strict=True) if not uv]
    uv = [s for s, uv in zip(expected, is_uv, strict=True) if uv]
    with open_archive(output) as archive:
        assert len(archive) == len(ms) == result.spectra
        assert archive.wavelength_spectrum_count == len(uv)
        # every spectrum's signal is in spectra_data, where every mzPeak reader looks
        assert archive.member("spectrum", "peaks") is None
        data = archive.signal("spectrum")
        stored = set(data.item_indices().tolist()) if data is not None else set()
        with_signal = {i for i, s in enumerate(ms) if len(s["arrays"].get("m/z array", ()))}
        assert with_signal <= stored, f"{path.name}: spectra missing from spectra_data"
        for i, want in enumerate(ms):
            spectrum = archive[i]
            where = f"{path.name} spectrum {i}"
            check_metadata(want, spectrum, where)
            check_signal(want["arrays"], spectrum.arrays, where)
        for i, want in enumerate(uv):
            check_signal(
                want["arrays"],
                archive.read_wavelength_spectrum(i).arrays,
                f"{path.name} UV spectrum {i}",
            )
        chromatograms = oracle.chromatograms(path, tmp_path)
        assert archive.chromatogram_count == len(chromatograms)
        for i, want in enumerate(chromatograms):
            got = archive.read_chromatogram(i)
            assert got.id == want["id"]
            for name, values in want["arrays"].items():
                ours = got.arrays.get(name, np.zeros(0))
                assert np.array_equal(values.astype(np.float64), ours.astype(np.float64)), (
                    f"{path.name} chromatogram {i} {name}"
                )
