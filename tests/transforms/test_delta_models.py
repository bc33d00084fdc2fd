"""The spacing models of a whole partition, fitted at once, are bit for bit the models fitted one
spectrum at a time, on every profile run of ../shared/data and on hostile arrays (the archive
stores them, and they decide which zero pairs become null)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mzpeak_dask.format import vocabulary as V
from mzpeak_dask.readers import SPECTRA, MzMLFormat
from mzpeak_dask.readers.base import ItemRange
from mzpeak_dask.transforms import delta_models
from mzpeak_dask.transforms.delta_models import (
    _weights,
    concatenated_weights,
    constant_preferred,
    fit_concatenated,
    fit_delta_models,
    second_medians,
)
from mzpeak_dask.transforms.null_marking import fit_delta_model, second_median

from ..helpers.real_runs import PROFILE_RUNS


def _bits(model) -> list[bytes]:
    return [np.float64(v).tobytes() for v in model]


def _profile_arrays(path: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    survey = MzMLFormat.survey(str(path))
    offsets = survey.spectrum_offsets
    items = ItemRange(SPECTRA, 0, survey.spectrum_count, int(offsets[0]), int(offsets[-1]))
    out = []
    for record in MzMLFormat.read(str(path), items, survey.hints):
        arrays = {a.array_type: np.asarray(a.values) for a in record.arrays}
        if record.is_profile and V.MZ_ARRAY in arrays and V.INTENSITY_ARRAY in arrays:
            out.append((arrays[V.MZ_ARRAY], arrays[V.INTENSITY_ARRAY]))
    return out


def _assert_same(mzs, intensities) -> None:
    batched = fit_delta_models(mzs, intensities)
    assert len(batched) == len(mzs)
    for k, (mz, intensity) in enumerate(zip(mzs, intensities, strict=True)):
        assert _bits(batched[k]) == _bits(fit_delta_model(mz, intensity)), k


@pytest.mark.parametrize("path", PROFILE_RUNS, ids=lambda p: p.name)
def test_batched_models_are_the_single_models_on_real_runs(path: Path) -> None:
    spectra = _profile_arrays(path)
    assert spectra
    quadratic = sum(len(m) == 3 for m in fit_delta_models(*map(list, zip(*spectra, strict=True))))
    _assert_same([m for m, _ in spectra], [i for _, i in spectra])
    # replicated spectra: equal-shaped fits, factorised in one stacked call
    _assert_same([m for m, _ in spectra] * 3, [i for _, i in spectra] * 3)
    # the intensities as float64 and as integers take their own weights
    _assert_same([m for m, _ in spectra], [i.astype(np.float64) * 3 for _, i in spectra])
    _assert_same([m for m, _ in spectra], [i.astype(np.int32) for _, i in spectra])
    if path.name.startswith("FeatureFinder"):
        assert quadratic > 0  # the quadratic branch is exercised on real data


values = st.floats(allow_nan=True, allow_infinity=True, width=64)


# fewer than the profile's: each example fits the models of a list of runs twice
@settings(max_examples=60)
@given(
    st.lists(
        st.tuples(
            st.lists(st.floats(0, 2000, width=64) | values, max_size=40),
            st.booleans(),
            st.integers(0, 3),
        ),
        max_size=8,
    )
)
def test_batched_models_match_on_arbitrary_arrays(spectra) -> None:
    mzs, intensities = [], []
    for raw, with_intensity, seed in spectra:
        with np.errstate(over="ignore"):  # a running sum of arbitrary floats may reach inf
            mz = np.cumsum(np.abs(np.nan_to_num(np.array(raw, dtype=np.float64)))) / 7 + seed
        if raw and seed == 3:
            mz[len(mz) // 2] = raw[0]  # unsorted, NaN or infinite points too
        mzs.append(mz)
        rng = np.random.default_rng(seed)
        intensity = (rng.random(mz.size) * 1e5).astype(np.float32)
        intensity[rng.random(mz.size) < 0.3] = 0
        intensities.append(intensity if with_intensity else None)
    _assert_same(mzs, intensities)
    _assert_same(mzs * 2, intensities * 2)  # equal shapes: stacked factorisations


# fewer than the profile's: each example fits the models of a list of runs twice
@settings(max_examples=60)
@given(
    st.lists(st.lists(st.floats(-2, 1e9, width=32) | values, max_size=30), max_size=6),
    st.sampled_from([np.float32, np.float64, np.int32, np.int64]),
    st.integers(0, 3),
)
def test_concatenated_fit_is_the_fit_of_the_list(raw, dtype, seed: int) -> None:
    """Weights and models from one concatenation of a dtype are those of the list of arrays."""
    with np.errstate(invalid="ignore", over="ignore"):
        intensities = [np.nan_to_num(np.array(r)).astype(dtype) for r in raw]
    lengths = np.array([i.shape[0] for i in intensities], dtype=np.int64)
    rng = np.random.default_rng(seed)
    mzs = [300.0 + np.cumsum(0.01 + 0.3 * rng.random(n) * (seed % 2)) for n in lengths]
    if not intensities:
        return
    joined = np.concatenate(intensities)
    weights = concatenated_weights(joined)
    assert weights.tobytes() == _weights(intensities, lengths).tobytes()
    models = fit_concatenated(np.concatenate(mzs), weights, lengths)
    assert [_bits(m) for m in models] == [_bits(m) for m in fit_delta_models(mzs, intensities)]


def test_mismatched_intensity_is_a_caller_error() -> None:
    """The readers refuse such a spectrum, naming the file and the spectrum
    (tests/readers/test_hostile_arrays.py); here it is a wrong call."""
    with pytest.raises(ValueError, match="intensity array has 2 points"):
        fit_delta_models([np.arange(3.0)], [np.ones(2)])
    assert fit_delta_models([], []) == []


# fewer than the profile's: each example takes medians of a list of runs twice
@settings(max_examples=80)
@given(
    st.lists(
        st.lists(st.sampled_from([0.0, -0.0, 1.0, 2.5, np.inf, -np.inf, np.nan]) | values),
        max_size=10,
    )
)
def test_second_medians_are_numpys_on_hostile_runs(runs) -> None:
    """Both ways: runs sorted as matrix rows, and every run selected on its own (as runs longer
    than SELECTED_SPAN are)."""
    deltas = np.array([v for run in runs for v in run], dtype=np.float64)
    spans = np.array([len(run) for run in runs], dtype=np.int64)
    starts = np.cumsum(spans) - spans
    for selected_span in (delta_models.SELECTED_SPAN, 0):
        batched = second_medians(deltas, starts, spans, selected_span)
        for k, run in enumerate(runs):
            assert _bits([batched[k]]) == _bits([second_median(np.array(run, dtype=np.float64))])


def test_long_runs_are_selected_with_the_medians_of_a_sort() -> None:
    """Runs past SELECTED_SPAN, with ties, zeros of both signs and gaps, as real spacings."""
    rng = np.random.default_rng(7)
    runs = []
    for n in (1025, 1026, 4000, 20_001):
        run = np.round(rng.random(n) * 50) / 1000  # many ties
        run[rng.random(n) < 0.05] = -0.0
        run[rng.random(n) < 0.01] = 30.0  # gaps between peaks
        runs.append(run)
    runs.append(np.concatenate([runs[0], [np.nan]]))
    runs.append(np.concatenate([runs[1], [np.inf, -np.inf]]))
    spans = np.array([r.size for r in runs], dtype=np.int64)
    batched = second_medians(np.concatenate(runs), np.cumsum(spans) - spans, spans)
    assert (spans > delta_models.SELECTED_SPAN).all()
    for k, run in enumerate(runs):
        assert _bits([batched[k]]) == _bits([second_median(run)]), k
    assert np.isnan(batched[4]) and np.isfinite(batched[:4]).all()


def _numpy_decision(constant: np.ndarray, quadratic: np.ndarray) -> bool:
    return bool(np.sum(constant) < np.sum(quadratic) / 10.0)


# fewer than the profile's: each example fits the models of a list of runs twice
@settings(max_examples=120)
@given(
    st.lists(
        st.tuples(
            st.lists(st.floats(0, 1e6) | st.sampled_from([0.0, np.inf, np.nan]), min_size=1),
            st.sampled_from(["random", "tie", "near", "scaled"]),
        ),
        min_size=1,
        max_size=8,
    ),
    st.integers(0, 3),
)
def test_constant_preference_is_decided_as_numpys_sums_decide(runs, seed: int) -> None:
    """The quick sequential sums decide only where rounding cannot flip the comparison: ties,
    near ties, long runs of values summed in another order, NaN and infinity all give
    the pairwise sums' answer."""
    rng = np.random.default_rng(seed)
    constants, quadratics = [], []
    for values, kind in runs:
        constant = np.array(values, dtype=np.float64) ** 2
        if kind == "tie":  # equal sums: the constant is not below
            quadratic = constant * 10.0
        elif kind == "near":  # equal but for the summation order's rounding
            quadratic = rng.permutation(constant) * 10.0
        elif kind == "scaled":  # long runs, sums within a few ulps
            constant = np.repeat(rng.random(len(values)) * 1e-3, 300)
            quadratic = rng.permutation(constant) * (10.0 + 1e-14)
        else:
            quadratic = rng.random(len(values)) * 10 * constant.mean()
        constants.append(constant)
        quadratics.append(quadratic)
    spans = np.array([len(c) for c in constants], dtype=np.int64)
    gap = 5  # runs lie apart, as a partition's spectra (the spacing between them belongs to none)
    starts = np.cumsum(spans + gap) - spans
    total = int(starts[-1] + spans[-1] + gap)
    constant_all, quadratic_all = np.full(total, 7.0), np.full(total, 0.5)
    for k in range(len(constants)):
        constant_all[starts[k] : starts[k] + spans[k]] = constants[k]
        quadratic_all[starts[k] : starts[k] + spans[k]] = quadratics[k]
    decided = constant_preferred(constant_all, quadratic_all, starts, spans)
    expected = [_numpy_decision(c, q) for c, q in zip(constants, quadratics, strict=True)]
    assert decided.tolist() == expected
