"""Null marking of a whole partition at once (format document §5.2): :func:`null_pair_masks`
and :func:`verified_null_masks` give, over the concatenation of many spectra (see
:mod:`~mzpeak_dask.transforms.runs`), bit for bit the masks that
:func:`~mzpeak_dask.transforms.null_marking.null_pair_mask` and
:func:`~mzpeak_dask.transforms.null_marking.verified_null_mask` give one spectrum at a time.

Segments of non-null values end where a spectrum ends, a null is rebuilt only from segments of
its own spectrum, and each spectrum's rounds of checking stop when the single-spectrum check
stops. The spacing of a segment is a median of its own values, so sorting the segments'
spacings as the rows of one matrix per length class finds the same medians. A spectrum with a
non-finite m/z (where the single-spectrum medians depend on how NaN sorts next to other
segments), without a spacing model, or longer than :data:`ALONE_POINTS` is checked on its own.
"""

from __future__ import annotations

import numpy as np

from .null_marking import extrapolated_nulls, verified_null_mask
from .runs import owners, run_any, run_edges, run_starts

__all__ = ["ALONE_POINTS", "null_pair_masks", "verified_null_masks"]

# Spectra longer than this are checked one at a time: their own arrays stay in cache through
# the check's passes, and the per-call overhead a partition-wide pass saves is negligible there.
ALONE_POINTS = 4096


def null_pair_masks(intensity: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """True for zero intensities with a zero neighbour in the same spectrum."""
    is_zero = np.asarray(intensity) == 0
    first, last = run_edges(lengths)
    neighbour_zero = np.zeros_like(is_zero)
    neighbour_zero[1:] |= is_zero[:-1] & ~first[1:]
    neighbour_zero[:-1] |= is_zero[1:] & ~last[:-1]
    return is_zero & neighbour_zero


def verified_null_masks(
    mz: np.ndarray,
    intensity: np.ndarray,
    lengths: np.ndarray,
    models: list[list[float] | None],
    max_ppm: float,
    rounds: int = 3,
) -> np.ndarray:
    """The verified null mask of every spectrum (``models[k]``: spectrum ``k``'s spacing
    model), concatenated. Each round looks only at the spectra still being checked, and only
    rebuilds their nulls."""
    mz = np.asarray(mz, dtype=np.float64)
    lengths = np.asarray(lengths, dtype=np.int64)
    count = lengths.shape[0]
    mask = null_pair_masks(intensity, lengths)
    run = owners(lengths)
    no_model = np.array([m is None or len(m) == 0 for m in models], dtype=bool)
    alone = run_any(~np.isfinite(mz), run, count) | no_model | (lengths > ALONE_POINTS)
    starts = run_starts(lengths)
    for k in np.flatnonzero(alone).tolist():
        span = slice(starts[k], starts[k] + lengths[k])
        model = None if models[k] is None else np.asarray(models[k])
        mask[span] = verified_null_mask(mz[span], intensity[span], model, max_ppm, rounds)
    active = ~alone
    first, last = run_edges(lengths)
    for _ in range(rounds):
        active &= run_any(mask, run, count)
        if not active.any():
            return mask
        checked = np.flatnonzero(active[run])
        nulls, filled = _rebuilt_nulls(mz[checked], ~mask[checked], run[checked], models)
        at = checked[nulls]
        with np.errstate(divide="ignore", invalid="ignore"):
            error = np.abs(filled - mz[at]) / np.abs(mz[at]) * 1e6
        bad = np.zeros_like(mask)
        bad[at[~(error <= max_ppm)]] = True
        active &= run_any(bad, run, count)
        if not active.any():
            return mask
        grown = bad.copy()  # a null pair goes together, never across two spectra
        grown[1:] |= bad[:-1] & mask[1:] & ~first[1:]
        grown[:-1] |= bad[1:] & mask[:-1] & ~last[:-1]
        mask &= ~grown
    mask[active[run]] = False  # still failing after the last round: left unmarked
    return mask


def _rebuilt_nulls(
    values: np.ndarray, valid: np.ndarray, run: np.ndarray, models: list[list[float] | None]
) -> tuple[np.ndarray, np.ndarray]:
    """Where the nulls are, and ``fill_nulls``'s values for them, of every spectrum (finite
    values, a model each) of a concatenation."""
    nulls = np.flatnonzero(~valid)
    valid_index = np.flatnonzero(valid)
    if valid_index.size == 0:
        return nulls, np.full(nulls.shape, np.nan)
    valid_run = run[valid_index]
    starts_segment = np.diff(valid_index, prepend=-2) != 1
    starts_segment[1:] |= valid_run[1:] != valid_run[:-1]
    segment = np.cumsum(starts_segment) - 1
    n_segments = int(segment[-1]) + 1
    delta = _second_medians(values, valid_index, segment, n_segments)
    single = np.isnan(delta)
    if single.any():
        lone = valid_index[starts_segment][single]
        delta[single] = _predict(models, run[lone], values[lone])
    return nulls, extrapolated_nulls(values, nulls, valid_index, segment, delta, run)


def _second_medians(
    values: np.ndarray, valid_index: np.ndarray, segment: np.ndarray, n_segments: int
) -> np.ndarray:
    """``segment_second_medians`` of null marking, bit for bit (its arithmetic on each
    segment's sorted spacings), the segments sorted as the rows of one matrix per length class
    (padded with +inf) rather than by one sort of the whole partition."""
    same = segment[1:] == segment[:-1]
    deltas = (values[valid_index[1:]] - values[valid_index[:-1]])[same]
    counts = np.bincount(segment[1:][same], minlength=n_segments)
    starts = np.cumsum(counts) - counts
    result = np.full(n_segments, np.nan)
    present = np.flatnonzero(counts)
    if present.size == 0:
        return result
    length_class = np.ceil(np.log2(counts[present])).astype(np.int64)
    for cls in np.unique(length_class).tolist():
        rows = present[length_class == cls]
        size = counts[rows]
        column = np.arange(int(size.max()))
        real = column < size[:, None]
        block = np.where(real, deltas[np.where(real, starts[rows, None] + column, 0)], np.inf)
        block.sort(axis=1)
        at = np.arange(rows.shape[0])
        first = (block[at, (size - 1) // 2] + block[at, size // 2]) / 2
        below = np.count_nonzero(real & (block <= first[:, None]), axis=1)
        result[rows] = (block[at, (below - 1) // 2] + block[at, below // 2]) / 2
    return result


def _predict(models: list[list[float] | None], runs: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``predict_delta(models[runs[i]], x[i])`` for every i, with its arithmetic: the constant,
    then ``+ beta * x**power`` power by power."""
    out = np.empty(x.shape[0])
    sizes = np.array([len(models[k]) for k in runs.tolist()], dtype=np.int64)
    for size in np.unique(sizes).tolist():
        at = np.flatnonzero(sizes == size)
        coefficients = np.array([models[k] for k in runs[at].tolist()], dtype=np.float64)
        xs = x[at]
        total = coefficients[:, 0].copy()
        for power in range(1, size):
            total = total + coefficients[:, power] * xs**power
        out[at] = total
    return out
