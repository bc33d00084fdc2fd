"""An ion map's memory is set by a block of points, not by the run or by how many spectra a
block holds: real profile spectra (small.mzML's MS1 scans hold up to 33,000 points) replicated
over time to a run four times longer give the same peak, and a block of them stays far under
what 256 such spectra hold. Measured with tracemalloc (numpy's allocations), a counter that
does not depend on the machine's load."""

from __future__ import annotations

import tracemalloc

import dask
import numpy as np
import pytest

from mzpeak_dask import ConvertOptions, convert
from mzpeak_dask.analysis import ion_map, open_runs
from mzpeak_dask.analysis.archive_run import BLOCK_POINTS, BLOCK_SPECTRA, block_cuts

from ..conftest import INLINE
from ..export.builds import SMALL
from ..helpers.replicate import replicate

pytestmark = pytest.mark.slow


def test_block_cuts_bound_spectra_and_points() -> None:
    assert block_cuts(np.zeros(0, np.int64)) == [0]
    unknown = block_cuts(np.zeros(600, np.int64))  # no counts: blocks of BLOCK_SPECTRA spectra
    assert unknown == [0, BLOCK_SPECTRA, 2 * BLOCK_SPECTRA, 600]
    big = np.full(10, BLOCK_POINTS // 3 + 1)  # three of them exceed a block's points
    assert block_cuts(big) == [0, 2, 4, 6, 8, 10]
    huge = np.array([5, BLOCK_POINTS * 4, 5, 5])  # a spectrum over the budget is a block alone
    assert block_cuts(huge) == [0, 1, 2, 4]


def _peak(run_path) -> tuple[int, float]:
    """Peak traced bytes of a 1000 x 1000 ion map of the run, on one thread, and its sum."""
    [run] = open_runs(str(run_path))
    last = float(run.spectra["time"].max())
    mz_edges, rt_edges = np.linspace(100, 2000, 1001), np.linspace(0, last * 1.001, 1001)
    with dask.config.set(scheduler="sync"):
        ion_map([run], mz_edges, rt_edges).compute()  # what a first call loads and keeps
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        with dask.config.set(scheduler="sync"):
            image = ion_map([run], mz_edges, rt_edges).values[0]
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return peak, float(image.sum())


def test_ion_map_memory_is_a_block_not_the_run(tmp_path) -> None:
    peaks, sums = {}, {}
    for copies in (4, 16):  # 13 MB and 55 MB of mzML: 1.2 and 4.9 million points
        source = tmp_path / f"small_x{copies}.mzML"
        replicate(SMALL, source, copies)
        archive = tmp_path / f"small_x{copies}.mzpeak"
        convert(source, archive, ConvertOptions(), cluster=INLINE)
        peaks[copies], sums[copies] = _peak(archive)
    assert sums[16] > 3.9 * sums[4] > 0
    # a block of points (and the images being summed) at both sizes; blocks of 256 spectra,
    # 1.6 million points, took 2.2x as much for the longer run; and under 256 of the largest
    # spectra's points as float64 m/z and intensity
    assert peaks[16] <= 1.5 * peaks[4], peaks
    assert peaks[16] < 256 * 33_335 * 16, peaks
