"""Helpers the tests share: the command line run as users run it, what a failed run must show
and leave, archive digests, and the real runs the tests (and benchmarks) read with pyteomics."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from .conftest import DATA

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


def offsets_after(offsets: dict[str, int], counts: dict[str, int]) -> dict[str, int]:
    """The offsets of the partition after one written with ``offsets`` holding ``counts`` (its
    items per entity)."""
    return {**offsets, **{e: offsets.get(e, 0) + n for e, n in counts.items()}}


def run_cli(
    *args: str, cwd: Path | None = None, timeout: int = 600, **kwargs
) -> subprocess.CompletedProcess:
    """``mzpeak-dask ARGS`` in a fresh process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "mzpeak_dask", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        **kwargs,
    )


CHOICE = ("running in-process (", "starting a LocalCluster of ")


def one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    """A failed command that printed one ``error:`` line holding every fragment (after the
    line saying where a conversion runs, when convert chose it)."""
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    if lines and lines[0].startswith(CHOICE):
        lines = lines[1:]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def assert_clean(folder: Path, *keep: Path) -> None:
    """Nothing but the given inputs in ``folder``: no output, no temporary leftovers."""
    assert sorted(folder.iterdir()) == sorted(keep)


def member_digests(archive: Path) -> dict[str, str]:
    """SHA-256 of every member: two archives are equal when these are."""
    with zipfile.ZipFile(archive) as z:
        return {n: hashlib.sha256(z.read(n)).hexdigest() for n in z.namelist()}


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
