"""The real runs of ../shared/data the tests (and benchmarks) share, and small.mzML's spectra
as pyteomics reads them (the oracle)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..conftest import DATA

SMALL_MZML = DATA / "mzdata" / "small.mzML"
# the profile runs of ../shared/data: the layout tests and the layout benchmark use all of them
PROFILE_RUNS = [
    SMALL_MZML,
    DATA / "mzdata" / "three_test_scans.mzML",
    DATA / "openms" / "FeatureFinderMetaboIdent_1_input.mzML",
    DATA / "openms" / "TargetedSpectraExtractor_13C1_spectra0to100.mzML",
    DATA / "openms" / "peakpicker_tutorial_2.mzML",
    DATA / "openms" / "SerumTest.mzML",
]


@dataclass(frozen=True)
class SourceSpectrum:
    """One spectrum's arrays as pyteomics reads them from the source (read-only)."""

    mz: np.ndarray
    intensity: np.ndarray
    profile: bool


@lru_cache(maxsize=1)
def small_spectra() -> tuple[SourceSpectrum, ...]:
    """Every spectrum of small.mzML, read once per test process by pyteomics (the oracle)."""
    from pyteomics import mzml

    out = []
    with mzml.MzML(str(SMALL_MZML)) as reader:
        for s in reader:
            mz, intensity = s["m/z array"], s["intensity array"]
            mz.setflags(write=False)
            intensity.setflags(write=False)
            out.append(SourceSpectrum(mz, intensity, "profile spectrum" in s))
    return tuple(out)


def stripped_small_spectra() -> list[tuple[np.ndarray, np.ndarray, bool]]:
    """``(m/z, intensity, profile)`` of every spectrum of small.mzML, the zero runs of the
    profile spectra stripped as the writer strips them."""
    from mzpeak_dask.transforms.zero_runs import zero_run_keep_mask

    out = []
    for s in small_spectra():
        keep = zero_run_keep_mask(s.intensity) if s.profile else slice(None)
        out.append((s.mz[keep], s.intensity[keep], s.profile))
    return out
