"""Zero-run stripping: worked examples, a run-based oracle, and the real profile spectra."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mzpeak_dask.transforms.zero_runs import apply_keep_mask, strip_zero_runs, zero_run_keep_mask

from ..helpers.real_runs import small_spectra


def oracle_keep(intensity: list[float]) -> list[bool]:
    """Independent statement of the rule, run by run (not point by point)."""
    n = len(intensity)
    keep: list[bool] = []
    position = 0
    for is_zero, group in itertools.groupby(intensity, key=lambda v: v == 0):
        length = len(list(group))
        run = [True] * length
        if is_zero:
            touches_start, touches_end = position == 0, position + length == n
            if touches_start and touches_end:
                run = [False] * length
            elif touches_start:
                run = [False] * (length - 1) + [True]
            elif touches_end:
                run = [True] + [False] * (length - 1)
            elif length >= 3:
                run = [True] + [False] * (length - 2) + [True]
        keep.extend(run)
        position += length
    return keep


@pytest.mark.parametrize(
    ("intensity", "kept"),
    [
        ([5, 0, 0, 0, 7], [0, 1, 3, 4]),
        ([5, 0, 0, 7], [0, 1, 2, 3]),
        ([0, 0, 0, 5], [2, 3]),
        ([0, 5, 0], [0, 1, 2]),
        ([5, 0, 0, 0], [0, 1]),
        ([5, 0, 0], [0, 1]),
        ([0, 0, 0], []),
        ([0], []),
        ([3], [0]),
        ([], []),
        ([0, 101, 101.01, 101.02, 0, 0, 0, 101.5, 0], [0, 1, 2, 3, 4, 6, 7, 8]),
    ],
)
def test_examples(intensity: list[float], kept: list[int]) -> None:
    mask = zero_run_keep_mask(np.array(intensity, dtype=np.float32))
    assert mask.dtype == bool
    assert np.flatnonzero(mask).tolist() == kept


def test_tailed_peaks_keep_only_inner_flanks() -> None:
    peak = [14627.2, 24097.7, 27908.5, 23742.2, 14179.8]
    intensity = np.array([0.0] * 8 + peak + [0.0] * 8 + peak + [0.0] * 8)
    kept = set(np.flatnonzero(zero_run_keep_mask(intensity)).tolist())
    assert kept == {7, *range(8, 13), 13, 20, *range(21, 26), 26}


intensities = st.lists(
    st.one_of(st.just(0.0), st.floats(0.5, 1e7, allow_nan=False)), min_size=0, max_size=60
)


@given(intensities)
def test_matches_run_oracle(values: list[float]) -> None:
    assert zero_run_keep_mask(np.array(values)).tolist() == oracle_keep(values)


@given(intensities)
def test_invariants(values: list[float]) -> None:
    intensity = np.array(values)
    (kept,) = apply_keep_mask(zero_run_keep_mask(intensity), intensity)
    assert np.array_equal(kept[kept != 0], intensity[intensity != 0])
    zero = kept == 0
    assert not np.any(zero[:-2] & zero[1:-1] & zero[2:])  # never three zeros in a row


def profile_spectra() -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    return tuple((s.mz, s.intensity.astype(np.float32)) for s in small_spectra() if s.profile)


def test_real_profile_spectra() -> None:
    spectra = profile_spectra()
    assert len(spectra) == 14
    mz, intensity = spectra[0]
    keep = zero_run_keep_mask(intensity)
    assert intensity.size == 19913
    assert keep.tolist() == oracle_keep(intensity.tolist())
    kept_mz, kept_intensity = apply_keep_mask(keep, mz, intensity)
    assert np.array_equal(kept_mz[kept_intensity != 0], mz[intensity != 0])


def test_strip_zero_runs_applies_to_parallel_arrays() -> None:
    intensity = np.array([4.0, 0, 0, 0, 0, 6.0], dtype=np.float32)
    mz = np.arange(6, dtype=np.float64) + 100.0
    stripped, (stripped_mz,) = strip_zero_runs(intensity, mz)
    assert stripped.tolist() == [4.0, 0.0, 0.0, 6.0]
    assert stripped_mz.tolist() == [100.0, 101.0, 104.0, 105.0]
