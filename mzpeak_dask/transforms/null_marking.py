"""Null marking of zero-intensity flanks and its reconstruction (format document §5.2).

Writing: after zero-run stripping, every zero intensity whose neighbour is also zero becomes null
in both the m/z and the intensity column (:func:`null_pair_mask`); isolated zeros stay real 0.0.
A per-spectrum spacing model, ``mz_delta_model``, is stored alongside (:func:`fit_delta_model`).

Reading: :func:`fill_nulls` rebuilds the null m/z values from their non-null neighbours and
:func:`fill_intensity` turns null intensities into 0.0.

Nulls are carried as a value array plus a boolean ``valid`` mask (True = non-null); the values at
null positions are ignored.

Decisions taken here (the reference is ``HUPO-PSI/mzPeak`` ``src/filter.rs``):

* The model is fitted on the arrays **before** zero-run stripping, as the reference writer does
  (``build_delta_model`` runs on the full array map; stripping happens later, when the arrays are
  laid out). Fitting after stripping gives visibly different coefficients.
* Medians are numpy's. The reference Rust ``median`` returns the smallest element for n <= 2 and,
  for even n > 2, averages the elements ``n/2`` and ``n/2 + 1`` (one past the true middle pair).
  We do not copy that quirk; it only moves the constant model by a fraction of one spacing step.
* Coefficients are in ascending powers (``predict = b0 + b1*mz + b2*mz**2``), as every reference
  reader and all example data use, whatever the specification's "descending" wording says.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "extrapolated_nulls",
    "fill_intensity",
    "fill_nulls",
    "fit_delta_model",
    "null_pair_mask",
    "predict_delta",
    "second_median",
    "segment_second_medians",
    "verified_null_mask",
]

_ZERO = np.float64(0.0)
MAX_MODEL_DELTA = 1.0  # spacings above this are gaps, not sampling steps (reference threshold)
MIN_REGRESSION_POINTS = 3
CONSTANT_PREFERENCE = 10.0  # keep the constant model when its error is 10x below the quadratic's


def null_pair_mask(intensity: np.ndarray) -> np.ndarray:
    """True for zero intensities that have a zero neighbour (these become null); isolated zeros
    stay False. Apply it to the zero-run-stripped arrays."""
    is_zero = np.asarray(intensity) == 0
    neighbour_zero = np.zeros_like(is_zero)
    neighbour_zero[1:] |= is_zero[:-1]
    neighbour_zero[:-1] |= is_zero[1:]
    return is_zero & neighbour_zero


def second_median(deltas: np.ndarray) -> float:
    """Median of the float64 deltas that are <= their median (0.0 for an empty array), as two
    ``np.median`` calls give it, bit for bit (NaN when there is a NaN), by selection: the
    deltas <= the first median are the smallest ones, so the second is read from the same
    array partitioned again, with no copy of them and no sort."""
    if deltas.shape[0] == 0:
        return 0.0
    part, first = _partitioned(deltas)
    below = int(np.count_nonzero(part <= first))
    if below == 0:  # a NaN median (a NaN, or +inf and -inf in a run of two): np.median of nothing
        return np.nan
    part = np.partition(part, ((below - 1) // 2, below // 2))
    return float(_middle_of_smallest(part, below))


def _median(values: np.ndarray) -> np.float64:
    """``np.median`` of a 1-d float64 array, bit for bit, without its generic machinery (it
    dominated the spacing model's cost): the middle element, or the mean of the middle pair
    (``(0 + a + b) / 2``, as ``np.mean`` of two values sums), NaN when there is a NaN."""
    if values.shape[0] == 0:
        return np.float64(np.nan)  # np.median of nothing
    return _partitioned(values)[1]


def _partitioned(values: np.ndarray) -> tuple[np.ndarray, np.float64]:
    """``values`` (not empty) partitioned at their middle and their last positions, and their
    :func:`_median` (a NaN sorts last)."""
    n = values.shape[0]
    part = np.partition(values, ((n - 1) // 2, n // 2, n - 1))
    if np.isnan(part[-1]):
        return part, np.float64(np.nan)
    return part, _middle_of_smallest(part, n)


def _middle_of_smallest(part: np.ndarray, count: int) -> np.float64:
    """numpy's median of the ``count`` smallest values, ``part`` partitioned at their middle
    position(s): the middle value plus +0.0 (numpy's sum starts from +0.0, so a -0.0 median is
    +0.0), or ``(0 + a + b) / 2`` of the middle pair."""
    if count % 2:
        return _ZERO + part[count // 2]
    # in Python floats: the same IEEE sums, without numpy's overflow warning when two values
    # past 8.99e307 sum to inf (as they do in numpy's mean)
    return np.float64((0.0 + float(part[count // 2 - 1]) + float(part[count // 2])) / 2.0)


def predict_delta(model: np.ndarray, mz: np.ndarray | float) -> np.ndarray | float:
    """Evaluate the spacing model ``sum(model[i] * mz**i)`` (ascending powers)."""
    coefficients = np.asarray(model, dtype=np.float64)
    x = np.asarray(mz, dtype=np.float64)
    total = np.full_like(x, coefficients[0] if coefficients.size else 0.0)
    for power, beta in enumerate(coefficients[1:], start=1):
        total = total + beta * x**power
    return float(total) if total.ndim == 0 else total


def _fit_quadratic(mz: np.ndarray, deltas: np.ndarray, weights: np.ndarray) -> np.ndarray | None:
    """Weighted least squares of delta ~ b0 + b1*mz + b2*mz**2 by QR of sqrt-weighted rows."""
    design = np.stack([np.ones_like(mz), mz, mz**2], axis=1) * weights[:, None]
    q, r = np.linalg.qr(design)
    if not np.all(np.diag(r) != 0):
        return None  # singular: the reference's triangular solve fails and it keeps the constant
    beta = np.linalg.solve(r, q.T @ (deltas * weights))
    return beta if np.all(np.isfinite(beta)) else None


def _row_weights(intensity: np.ndarray, n: int) -> np.ndarray:
    """``sqrt(ln(intensity + 1))`` in the intensity's float precision; 0 where undefined."""
    intensity = np.asarray(intensity)
    if intensity.shape[0] != n:
        raise ValueError(  # the readers pair them first (readers/binary.check_paired)
            f"intensity array has {intensity.shape[0]} points but the m/z array has {n}"
        )
    if not np.issubdtype(intensity.dtype, np.floating):
        intensity = intensity.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        weights = np.sqrt(np.log(intensity + 1)).astype(np.float64)
    return np.where(np.isfinite(weights), weights, 0.0)


def fit_delta_model(mz: np.ndarray, intensity: np.ndarray | None = None) -> np.ndarray:
    """Fit the per-spectrum ``mz_delta_model`` as the reference ``select_delta_model`` does.

    ``mz`` and ``intensity`` are the spectrum's arrays before zero-run stripping. Returns ``[c]``
    (the second median of the spacings) when its squared error is below a tenth of the weighted
    quadratic's, else ``[b0, b1, b2]``. The quadratic uses spacings <= 1.0 only, at least three of
    them, and row weights ``sqrt(ln(intensity + 1))`` (computed in the intensity's own precision:
    pass the intensities as stored, usually float32, to match the reference bit for bit), i.e.
    observation weights ``ln(intensity + 1)``; without intensities every weight is 1.
    """
    # m/z values no instrument gives (1e155, squared) overflow to inf here; the fit goes on with
    # the infinities as the batched fit (delta_models.py) does, and numpy's warning is noise
    with np.errstate(over="ignore", invalid="ignore"):
        return _select_delta_model(mz, intensity)


def _select_delta_model(mz: np.ndarray, intensity: np.ndarray | None) -> np.ndarray:
    mz = np.asarray(mz, dtype=np.float64)
    deltas = np.diff(mz)
    constant = second_median(deltas)
    weights = np.ones_like(mz) if intensity is None else _row_weights(intensity, mz.shape[0])
    usable = deltas <= MAX_MODEL_DELTA
    if np.count_nonzero(usable) < MIN_REGRESSION_POINTS:
        return np.array([constant])
    beta = _fit_quadratic(mz[1:][usable], deltas[usable], weights[1:][usable])
    if beta is None:
        return np.array([constant])
    # Both errors pair mz[i] with mz[i+1] - mz[i] and sum over every spacing, like the reference.
    error_constant = np.sum((constant - deltas) ** 2)
    error_quadratic = np.sum((predict_delta(beta, mz[:-1]) - deltas) ** 2)
    if error_constant < error_quadratic / CONSTANT_PREFERENCE:
        return np.array([constant])
    return beta


def segment_second_medians(
    values: np.ndarray, valid_index: np.ndarray, segment: np.ndarray, n_segments: int
) -> np.ndarray:
    """Second median of the spacing inside each segment (NaN for one-point segments)."""
    same = segment[1:] == segment[:-1]
    deltas = (values[valid_index[1:]] - values[valid_index[:-1]])[same]
    owner = segment[1:][same]
    order = np.lexsort((deltas, owner))  # by segment, then by spacing
    deltas, owner = deltas[order], owner[order]
    counts = np.bincount(owner, minlength=n_segments)
    starts = np.cumsum(counts) - counts
    has = counts > 0
    first = _middle(deltas, starts[has], counts[has])
    at_most = deltas <= np.repeat(first, counts[has])  # a prefix of each sorted segment
    below = np.bincount(owner[at_most], minlength=n_segments)
    result = np.full(n_segments, np.nan)
    result[has] = _middle(deltas, starts[has], below[has])
    return result


def _middle(sorted_values: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """numpy-style median of the sorted runs ``sorted_values[starts : starts + counts]``."""
    low = sorted_values[starts + (counts - 1) // 2]
    high = sorted_values[starts + counts // 2]
    return (low + high) / 2


def fill_nulls(values: np.ndarray, valid: np.ndarray, model: np.ndarray | None) -> np.ndarray:
    """Reconstruct a null-marked main axis (float64; non-null values are returned unchanged).

    Segments are runs of non-null values. A null takes its value from the nearer segment (the left
    one on a tie, so in a pair the first null is the right flank of the segment before it and the
    second null the left flank of the segment after it): ``last + k*delta`` or ``first - k*delta``,
    ``k`` being the distance in points. ``delta`` is the segment's local second-median spacing when
    it has two or more values, else ``predict_delta(model, value)``; without a model the second
    median of the whole array's non-null spacing is used. Runs of three or more nulls are filled
    the same way (best effort). Nulls with no non-null value anywhere come back as NaN.
    """
    values = np.asarray(values, dtype=np.float64)
    valid = np.asarray(valid, dtype=bool)
    if valid.all():
        return values.copy()
    nulls, filled = _rebuilt_nulls(values, valid, model)
    out = values.copy()
    out[nulls] = filled
    return out


def _rebuilt_nulls(
    values: np.ndarray, valid: np.ndarray, model: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Where the nulls of ``values`` (float64) are, and the values :func:`fill_nulls` gives
    them (NaN when nothing is valid): only the nulls are computed."""
    nulls = np.flatnonzero(~valid)
    valid_index = np.flatnonzero(valid)
    if valid_index.size == 0:
        return nulls, np.full(nulls.shape, np.nan)
    starts_segment = np.diff(valid_index, prepend=-2) != 1
    segment = np.cumsum(starts_segment) - 1
    n_segments = int(segment[-1]) + 1
    delta = segment_second_medians(values, valid_index, segment, n_segments)
    single = np.isnan(delta)
    if single.any():
        lone_values = values[valid_index[starts_segment]][single]
        if model is not None and np.size(model):
            delta[single] = predict_delta(model, lone_values)
        else:
            delta[single] = second_median(np.diff(values[valid_index]))
    return nulls, extrapolated_nulls(values, nulls, valid_index, segment, delta)


def extrapolated_nulls(
    values: np.ndarray,
    nulls: np.ndarray,
    valid_index: np.ndarray,
    segment: np.ndarray,
    delta: np.ndarray,
    run: np.ndarray | None = None,
) -> np.ndarray:
    """Every null extrapolated from the nearer neighbouring segment by whole spacing steps,
    the left one on a tie. With ``run`` (the spectrum of each position of a concatenation),
    only segments of the null's own spectrum count, and a null without one is NaN."""
    far = values.shape[0] + 1
    before = np.searchsorted(valid_index, nulls) - 1  # slot of the last non-null before
    after = before + 1
    has_before = before >= 0
    has_after = after < valid_index.size
    before = np.clip(before, 0, valid_index.size - 1)
    after = np.clip(after, 0, valid_index.size - 1)
    left, right = valid_index[before], valid_index[after]
    if run is not None:
        own = run[nulls]
        has_before &= run[left] == own
        has_after &= run[right] == own
    left_steps = np.where(has_before, nulls - left, far)
    right_steps = np.where(has_after, right - nulls, far)
    left_value = values[left] + left_steps * delta[segment[before]]
    right_value = values[right] - right_steps * delta[segment[after]]
    filled = np.where(left_steps <= right_steps, left_value, right_value)
    return filled if run is None else np.where(has_before | has_after, filled, np.nan)


def fill_intensity(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Null intensities of a null-marked array become 0.0 (the dtype is kept)."""
    values = np.asarray(values)
    return np.where(np.asarray(valid, dtype=bool), values, np.zeros((), dtype=values.dtype))


def verified_null_mask(
    mz: np.ndarray,
    intensity: np.ndarray,
    model: np.ndarray | None,
    max_ppm: float,
    rounds: int = 3,
) -> np.ndarray:
    """:func:`null_pair_mask`, keeping only the pairs whose m/z :func:`fill_nulls` rebuilds
    within ``max_ppm``.

    Null marking assumes evenly sampled flanks; where the source skips samples next to a peak
    (seen in real Orbitrap data) the rebuilt position can be off by several ppm. Such pairs stay
    real zeros, so reading the archive gives every zero point back within ``max_ppm``.
    Unmarking a pair merges its neighbouring segments, which can move their spacing, so the
    check repeats; after ``rounds`` rounds that still find bad pairs the spectrum is left
    unmarked altogether (cost stays bounded; such spectra are irregularly sampled anyway).
    """
    mz = np.asarray(mz, dtype=np.float64)
    mask = null_pair_mask(intensity)
    for _ in range(rounds):
        if not mask.any():
            return mask
        nulls, filled = _rebuilt_nulls(mz, ~mask, model)
        source = mz[nulls]
        with np.errstate(divide="ignore", invalid="ignore"):
            error = np.abs(filled - source) / np.abs(source) * 1e6
        bad = np.zeros_like(mask)
        bad[nulls[~(error <= max_ppm)]] = True  # NaN (nothing to rebuild from) is bad
        if not bad.any():
            return mask
        grown = bad.copy()  # a null pair goes together
        grown[1:] |= bad[:-1] & mask[1:]
        grown[:-1] |= bad[1:] & mask[:-1]
        mask &= ~grown
    return np.zeros_like(mask)
