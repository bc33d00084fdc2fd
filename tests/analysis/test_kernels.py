"""The numpy kernels against naive loops, on seeded synthetic spectra."""

from __future__ import annotations

import numpy as np
import pytest

from mzpeak_dask import OptionsError
from mzpeak_dask.analysis.kernels import (
    item_window_sums,
    overlapping,
    ppm_windows,
    segment_stats,
    select_spectra,
    window_sums,
)


def _points(seed: int, spectra: int = 40) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 300, spectra)
    mz = np.concatenate([np.sort(rng.uniform(100, 1000, n)) for n in sizes])
    intensity = rng.exponential(1e4, len(mz)).astype(np.float32)
    intensity[rng.random(len(mz)) < 0.1] = 0.0
    return mz, intensity, np.repeat(np.arange(spectra), sizes)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("shuffled", [False, True], ids=["sorted", "shuffled"])
def test_window_sums_match_a_naive_loop(seed, shuffled) -> None:
    """Both paths: m/z sorted within each spectrum (binary search per spectrum) and any
    order (binary search per point)."""
    mz, intensity, segment = _points(seed)
    if shuffled:
        order = np.random.default_rng(seed).permutation(len(mz))
        mz, intensity, segment = mz[order], intensity[order], segment[order]
    rng = np.random.default_rng(seed + 100)
    targets = rng.choice(mz, 12)
    targets[:3] = targets[0] * (1 + np.array([0, 5e-6, -8e-6]))  # overlapping windows
    low, high = ppm_windows(targets, 20.0)
    got = window_sums(mz, intensity, segment, 40, low, high)
    for s in range(40):
        m, i = mz[segment == s], intensity[segment == s].astype(np.float64)
        want = [i[(m >= a) & (m <= b)].sum() for a, b in zip(low, high, strict=True)]
        np.testing.assert_allclose(got[s], want, rtol=1e-12)
    assert got[:, 0].sum() > 0  # targets were drawn from the data


def test_window_sums_ignore_nan_and_edges() -> None:
    mz = np.array([99.0, 100.0, 101.0, np.nan, 102.0])
    intensity = np.ones(5)
    got = window_sums(mz, intensity, np.zeros(5, np.int64), 1, np.array([100.0]), np.array([102.0]))
    assert got.tolist() == [[3.0]]  # inclusive bounds, NaN never matches


@pytest.mark.parametrize("seed", [3, 4])
def test_segment_stats_match_a_naive_loop(seed) -> None:
    mz, intensity, segment = _points(seed)
    intensity[5] = intensity[6] = intensity.max() * 2  # a tie: the first one wins
    got = segment_stats(mz, intensity, segment, 40)
    for s in range(40):
        m, i = mz[segment == s], intensity[segment == s].astype(np.float64)
        if not len(m):
            assert got[s, 0] == 0 and np.isnan(got[s, 1:]).all()
            continue
        np.testing.assert_allclose(got[s, 0], i.sum(), rtol=1e-12)
        assert got[s, 1] == m[np.argmax(i)] and got[s, 2] == i.max()


def test_selection_and_validation() -> None:
    time = np.array([1.0, 2.0, np.nan, 3.0, 4.0])
    level = np.array([1, 2, 1, 1, 1])
    assert select_spectra(time, level).tolist() == [0, 2, 3, 4]
    assert select_spectra(time, level, (2.0, 3.0)).tolist() == [3]
    assert select_spectra(time, level, (2.0, 3.0), None).tolist() == [1, 3]
    with pytest.raises(OptionsError, match="RT range"):
        select_spectra(time, level, (3.0, 2.0))
    with pytest.raises(OptionsError, match="ppm"):
        ppm_windows(np.array([100.0]), 0)
    with pytest.raises(OptionsError, match="at least one"):
        ppm_windows(np.array([]), 10)
    start, end = np.array([0.0, 10.0, np.nan]), np.array([5.0, 20.0, np.nan])
    assert overlapping(start, end, np.array([5.0]), np.array([6.0])).tolist() == [
        True,
        False,
        False,
    ]


@pytest.mark.parametrize("count", [3, 10])  # one mask per window / binary searches
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_item_window_sums_match_a_naive_loop(seed, count) -> None:
    """Stored columns as they come: nulls (NaN m/z or intensity), spectra that were not
    asked for, uint64 ids, overlapping windows; few targets and many."""
    mz, intensity, segment = _points(seed)
    rng = np.random.default_rng(seed + 7)
    item = (segment * 3 + 5).astype(np.uint64)  # spectrum ids, not positions
    mz[rng.random(len(mz)) < 0.05] = np.nan
    intensity = intensity.astype(np.float64)
    intensity[rng.random(len(mz)) < 0.05] = np.nan
    ids = np.unique(item)[::2].astype(np.int64)  # every other spectrum
    targets = rng.choice(mz[np.isfinite(mz) & np.isin(item, ids)], count)
    targets[:2] = targets[0] * (1 + np.array([0, 4e-6]))
    low, high = ppm_windows(targets, 15.0)
    got = item_window_sums(mz, intensity, item, ids, low, high)
    want = np.zeros((len(ids), len(targets)))
    for r, spectrum in enumerate(ids):
        mine = item == spectrum
        for t in range(len(targets)):
            inside = mine & (mz >= low[t]) & (mz <= high[t])
            want[r, t] = np.nansum(intensity[inside])
    assert want.sum() > 0
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
