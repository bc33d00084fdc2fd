"""Null marking: masks, the spacing model, reconstruction, and agreement with the reference data."""

from __future__ import annotations

import io
import zipfile
from functools import lru_cache

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mzpeak_dask.transforms.null_marking import (
    fill_intensity,
    fill_nulls,
    fit_delta_model,
    null_pair_mask,
    predict_delta,
    second_median,
)
from mzpeak_dask.transforms.zero_runs import zero_run_keep_mask

from ..conftest import DATA
from ..helpers.real_runs import small_spectra

MAX_PPM = 0.02


# --- masks and the model ------------------------------------------------------------------------


def test_null_pair_mask_examples() -> None:
    intensity = np.array([0, 5, 0, 0, 7, 0, 9, 0, 0], dtype=np.float32)
    assert null_pair_mask(intensity).tolist() == [0, 0, 1, 1, 0, 0, 0, 1, 1]
    assert null_pair_mask(np.array([])).tolist() == []
    assert null_pair_mask(np.array([0.0])).tolist() == [False]


def test_second_median_uses_numpy_median() -> None:
    # median 2.5, deltas <= 2.5 are [1, 2] -> 1.5 (the reference's quirk would give 1.0)
    assert second_median(np.array([4.0, 1.0, 3.0, 2.0])) == 1.5
    assert second_median(np.array([])) == 0.0


def test_predict_delta_ascending_powers() -> None:
    assert predict_delta(np.array([1.0, 2.0, 3.0]), 2.0) == 1 + 2 * 2 + 3 * 4
    assert predict_delta(np.array([0.25]), 1000.0) == 0.25
    assert np.array_equal(predict_delta([0.0, 1.0], np.array([1.0, 2.0])), [1.0, 2.0])


def test_fit_constant_grid_picks_constant() -> None:
    mz = 100.0 + np.arange(500) * 0.125
    model = fit_delta_model(mz, np.full(500, 1000.0, dtype=np.float32))
    assert model.tolist() == [0.125]


def test_fit_quadratic_grid_recovers_coefficients() -> None:
    beta = np.array([1e-2, 1e-4, 1e-7])  # ascending powers
    mz = [200.0]
    while mz[-1] < 600.0:  # spacing grows from 0.034 to 0.106
        mz.append(mz[-1] + float(predict_delta(beta, mz[-1])))
    mz = np.array(mz)
    model = fit_delta_model(mz, np.full(mz.size, 50.0, dtype=np.float32))
    assert model.size == 3
    # the reference regresses mz[i+1] - mz[i] on mz[i+1], the grid was built on mz[i]
    assert np.allclose(model, beta, rtol=2e-3, atol=0)


def test_fit_small_inputs_fall_back_to_constant() -> None:
    assert fit_delta_model(np.array([]), np.array([])).tolist() == [0.0]
    # deltas [0.5, 1.0]: median 0.75, second median 0.5; too few points for the quadratic
    assert fit_delta_model(np.array([10.0, 10.5, 11.5])).tolist() == [0.5]
    assert fit_delta_model(np.array([10.0, 20.0, 30.0, 40.0, 50.0])).tolist() == [10.0]


# --- fill_nulls ---------------------------------------------------------------------------------


def test_fill_local_second_median_and_model() -> None:
    values = np.array([0, 101.0, 101.01, 101.02, 0, 0, 101.5, 0])
    valid = np.array([0, 1, 1, 1, 0, 0, 1, 0], dtype=bool)
    filled = fill_nulls(values, valid, np.array([0.05]))
    deltas = np.diff([101.0, 101.01, 101.02])  # not exactly equal in binary
    step = np.median(deltas[deltas <= np.median(deltas)])
    assert step == deltas.min()
    expected = [101.0 - step, 101.0, 101.01, 101.02, 101.02 + step, 101.45, 101.5, 101.55]
    assert np.array_equal(filled, expected)


def test_fill_lone_interior_null_takes_the_left_segment() -> None:
    values = np.array([10.0, 10.5, 0, 20.0, 20.25])
    filled = fill_nulls(values, values != 0, None)
    assert filled[2] == 11.0


@given(
    st.lists(st.lists(st.floats(0.001, 3.0), min_size=1, max_size=12), min_size=1, max_size=10),
    st.floats(100.0, 1000.0),
)
def test_fill_uses_each_segments_second_median(segments: list[list[float]], origin: float) -> None:
    """Segments separated by null pairs; each flank is last + second_median(own spacing)."""
    parts, valid_parts, position = [], [], origin
    for spacing in segments:
        segment = position + np.concatenate(([0.0], np.cumsum(spacing)))
        parts += [segment, [0.0, 0.0]]
        valid_parts += [np.ones(segment.size, dtype=bool), [False, False]]
        position = segment[-1] + 100.0
    values, valid = np.concatenate(parts[:-1]), np.concatenate(valid_parts[:-1])
    filled = fill_nulls(values, valid, np.array([0.5]))
    right_flanks = np.flatnonzero(~valid)[::2]
    for flank, spacing in zip(right_flanks, segments, strict=False):
        segment = filled[flank - len(spacing) - 1 : flank]
        assert filled[flank] == segment[-1] + second_median(np.diff(segment))


def test_fill_single_point_uses_quadratic_model() -> None:
    model = np.array([0.001, 0.0, 1e-6])
    filled = fill_nulls(np.array([0, 500.0, 0]), np.array([0, 1, 0], dtype=bool), model)
    step = 0.001 + 1e-6 * 500.0**2
    assert np.array_equal(filled, [500.0 - step, 500.0, 500.0 + step])


def test_fill_without_model_uses_global_spacing() -> None:
    values = np.array([10.0, 10.1, 10.2, 0, 0, 20.0, 0, 0, 30.0, 30.1])
    valid = values != 0
    filled = fill_nulls(values, valid, None)
    assert filled[6] == pytest.approx(20.1)
    assert filled[3] == pytest.approx(10.3)


def test_fill_degenerate_inputs_never_raise() -> None:
    assert fill_nulls(np.array([]), np.array([], dtype=bool), None).size == 0
    assert np.isnan(fill_nulls(np.zeros(3), np.zeros(3, dtype=bool), None)).all()
    run = fill_nulls(
        np.array([1.0, 2.0, 0, 0, 0, 0, 0, 8.0, 9.0]), np.r_[1, 1, 0, 0, 0, 0, 0, 1, 1] > 0, None
    )
    assert np.array_equal(run, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])


def test_fill_intensity() -> None:
    out = fill_intensity(
        np.array([1.5, 7.0, 2.5], dtype=np.float32), np.array([1, 0, 1], dtype=bool)
    )
    assert out.dtype == np.float32 and out.tolist() == [1.5, 0.0, 2.5]


@st.composite
def grid_spectra(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, float]:
    """A uniform m/z grid with peaks separated by zero runs of any length."""
    step = draw(st.sampled_from([0.001, 0.0078125, 0.05, 0.25]))
    blocks = draw(st.lists(st.tuples(st.integers(0, 6), st.integers(1, 5)), max_size=12))
    intensity: list[float] = []
    for zeros, peak in blocks:
        intensity += [0.0] * zeros + [draw(st.floats(1.0, 1e6)) for _ in range(peak)]
    intensity += [0.0] * draw(st.integers(0, 4))
    mz = draw(st.floats(50.0, 2000.0)) + np.arange(len(intensity)) * step
    return mz, np.array(intensity, dtype=np.float32), step


@given(grid_spectra())
def test_strip_mark_fill_round_trip(spectrum: tuple[np.ndarray, np.ndarray, float]) -> None:
    mz, intensity, step = spectrum
    keep = zero_run_keep_mask(intensity)
    mz, intensity = mz[keep], intensity[keep]
    null = null_pair_mask(intensity)
    filled = fill_nulls(np.where(null, 0.0, mz), ~null, np.array([step]))
    assert np.array_equal(filled[~null], mz[~null])
    assert np.allclose(filled, mz, rtol=1e-9, atol=0)
    assert np.array_equal(fill_intensity(np.where(null, 5.0, intensity), ~null), intensity)


@given(st.lists(st.tuples(st.floats(1.0, 1e4), st.booleans()), max_size=40))
def test_fill_arbitrary_masks_is_total(points: list[tuple[float, bool]]) -> None:
    values = np.sort(np.array([v for v, _ in points]))
    valid = np.array([ok for _, ok in points], dtype=bool)
    filled = fill_nulls(np.where(valid, values, 0.0), valid, np.array([0.01]))
    assert filled.shape == values.shape
    assert np.array_equal(filled[valid], values[valid])
    if valid.any():
        assert np.isfinite(filled).all()


# --- real data: small.mzML and the reference point-layout archive ------------------------------


@lru_cache(maxsize=1)
def profile_spectra() -> dict[int, tuple[np.ndarray, np.ndarray]]:
    return {
        i: (s.mz, s.intensity.astype(np.float32))
        for i, s in enumerate(small_spectra())
        if s.profile
    }


@lru_cache(maxsize=1)
def reference_points() -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    with zipfile.ZipFile(DATA / "HUPO-PSI_mzPeak" / "small.mzpeak") as archive:
        data = pq.read_table(io.BytesIO(archive.read("spectra_data.parquet")))
        meta = pq.read_table(io.BytesIO(archive.read("spectra_metadata.parquet")))
    point = data.column("point").combine_chunks()
    mz = pc.struct_field(point, "mz")
    models = pc.struct_field(meta.column("spectrum").combine_chunks(), "mz_delta_model")
    return (
        pc.struct_field(point, "spectrum_index").to_numpy(),
        mz.fill_null(0.0).to_numpy(),
        mz.is_valid().to_numpy(zero_copy_only=False),
        models.to_pylist(),
    )


def strip_and_mark(mz: np.ndarray, intensity: np.ndarray):
    keep = zero_run_keep_mask(intensity)
    mz, intensity = mz[keep], intensity[keep]
    return mz, intensity, ~null_pair_mask(intensity)


def ppm(estimate: np.ndarray, truth: np.ndarray) -> float:
    return float(np.max(np.abs(estimate - truth) / truth) * 1e6)


def test_real_spectra_reconstruct_within_tolerance() -> None:
    spectra = profile_spectra()
    assert len(spectra) == 14
    worst = 0.0
    for mz, intensity in spectra.values():
        model = fit_delta_model(mz, intensity)
        kept_mz, kept_intensity, valid = strip_and_mark(mz, intensity)
        filled = fill_nulls(np.where(valid, kept_mz, 0.0), valid, model)
        nonzero = kept_intensity != 0
        assert np.array_equal(filled[nonzero], kept_mz[nonzero])
        worst = max(worst, ppm(filled, kept_mz))
    assert worst < MAX_PPM


def test_real_spectra_match_reference_null_mask() -> None:
    index, _, ref_valid, _ = reference_points()
    for i, (mz, intensity) in profile_spectra().items():
        _, _, valid = strip_and_mark(mz, intensity)
        assert np.array_equal(valid, ref_valid[index == i])
    assert np.count_nonzero(index == 0) == 13589


def test_fill_reference_arrays_with_reference_models() -> None:
    index, ref_mz, ref_valid, models = reference_points()
    for i, (mz, intensity) in profile_spectra().items():
        kept_mz, _, _ = strip_and_mark(mz, intensity)
        rows = index == i
        filled = fill_nulls(ref_mz[rows], ref_valid[rows], np.array(models[i]))
        assert ppm(filled, kept_mz) < MAX_PPM


def test_fitted_models_match_reference() -> None:
    *_, models = reference_points()
    for i, (mz, intensity) in profile_spectra().items():
        reference = np.array(models[i])
        fitted = fit_delta_model(mz, intensity)
        assert fitted.size == reference.size
        if reference.size == 1:
            assert fitted[0] == reference[0]  # the ion-trap scans: 1/11 m/z, exactly
        else:
            # coefficients of an ill-conditioned fit differ in the 9th digit (QR implementations);
            # the spacing they predict agrees to ~1e-13
            assert np.allclose(fitted, reference, rtol=1e-8, atol=0)
            grid = np.linspace(mz.min(), mz.max(), 200)
            expected = predict_delta(reference, grid)
            assert np.allclose(predict_delta(fitted, grid), expected, rtol=1e-12, atol=0)


def test_model_is_fitted_before_zero_run_stripping() -> None:
    *_, models = reference_points()
    constant = [i for i in profile_spectra() if len(models[i]) == 1]
    assert constant
    for i in constant:
        kept_mz, kept_intensity, _ = strip_and_mark(*profile_spectra()[i])
        assert fit_delta_model(kept_mz, kept_intensity).size == 3  # stripped: not the reference's


def test_fit_rejects_mismatched_arrays_and_survives_odd_intensities() -> None:
    with pytest.raises(ValueError, match="intensity array has 2 points"):
        fit_delta_model(np.arange(3.0), np.ones(2))
    mz = 100.0 + np.arange(50) * 0.01
    model = fit_delta_model(mz, np.full(50, -5.0))  # log undefined: weights 0, singular fit
    assert np.all(np.isfinite(model))
