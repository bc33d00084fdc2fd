"""The spacing model's median is numpy's, bit for bit, on every profile run of ../shared/data
(the archives depend on it: the model is stored, and it decides which zero pairs are null)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mzpeak_dask.format import vocabulary as V
from mzpeak_dask.readers import SPECTRA, MzMLFormat
from mzpeak_dask.readers.base import ItemRange
from mzpeak_dask.transforms.null_marking import _median, second_median

from ..helpers.real_runs import PROFILE_RUNS


def _numpy_second_median(deltas: np.ndarray) -> float:
    if deltas.size == 0:
        return 0.0
    return float(np.median(deltas[deltas <= np.median(deltas)]))


def _spacings(path: Path) -> list[np.ndarray]:
    survey = MzMLFormat.survey(str(path))
    offsets = survey.spectrum_offsets
    items = ItemRange(SPECTRA, 0, survey.spectrum_count, int(offsets[0]), int(offsets[-1]))
    out = []
    for record in MzMLFormat.read(str(path), items, survey.hints):
        for array in record.arrays:
            if array.array_type == V.MZ_ARRAY:
                out.append(np.diff(np.asarray(array.values, dtype=np.float64)))
    return out


@pytest.mark.parametrize("path", PROFILE_RUNS, ids=lambda p: p.name)
def test_median_is_numpys_on_real_spacings(path: Path) -> None:
    spacings = _spacings(path)
    assert spacings
    for deltas in spacings:
        if deltas.size:
            assert _median(deltas).tobytes() == np.median(deltas).tobytes()
        got = np.float64(second_median(deltas)).tobytes()
        assert got == np.float64(_numpy_second_median(deltas)).tobytes()


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=1, max_size=40))
def test_median_is_numpys_on_any_values(values: list[float]) -> None:
    array = np.array(values, dtype=np.float64)
    with np.errstate(over="ignore"):  # two values past 8.99e307: the mean is inf (ours too)
        want = np.median(array)
    got = _median(array)
    assert (np.isnan(want) and np.isnan(got)) or want.tobytes() == got.tobytes()


def test_second_median_of_spacings_with_nan_is_numpys_nan() -> None:
    # NaN leaves no spacing <= the first median: np.median of nothing is NaN, not an error
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        expected = _numpy_second_median(np.array([np.nan, 1.0, 2.0]))
    assert np.isnan(expected)
    assert np.isnan(second_median(np.array([np.nan, 1.0, 2.0])))


def _numpy_bits(deltas: np.ndarray) -> bytes | None:
    """numpy's second median as bytes (None for NaN, whose sign numpy leaves to the CPU)."""
    with warnings.catch_warnings(), np.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # np.median of nothing
        value = np.float64(_numpy_second_median(deltas))
    return None if np.isnan(value) else value.tobytes()


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=0, max_size=40))
def test_second_median_is_numpys_on_any_values(values: list[float]) -> None:
    deltas = np.array(values, dtype=np.float64)
    got = np.float64(second_median(deltas))
    assert (None if np.isnan(got) else got.tobytes()) == _numpy_bits(deltas)


def test_second_median_is_numpys_on_long_runs_with_ties() -> None:
    """Runs as long as real profile spectra's, with many ties, zeros of both signs and gaps:
    the second selection reads a prefix of the partitioned array, as a sort would give it."""
    rng = np.random.default_rng(11)
    for n in (1, 2, 3, 1024, 1025, 4000, 20_001):
        run = np.round(rng.random(n) * 50) / 1000
        run[rng.random(n) < 0.05] = -0.0
        run[rng.random(n) < 0.01] = 30.0
        assert np.float64(second_median(run)).tobytes() == _numpy_bits(run), n
