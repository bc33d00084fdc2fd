"""The spacing model (``mz_delta_model``) of many spectra at once, bit for bit the models
:func:`~mzpeak_dask.transforms.null_marking.fit_delta_model` fits one spectrum at a time.

A partition's spectra are concatenated and every element-wise step runs once over all of them:
spacings, row weights, the usable-spacing mask, the weighted design rows and right-hand sides,
the residuals of both models. What stays per spectrum is what floating point ties to the
spectrum's own array: the medians (a selection), the QR factorisation and its triangular solve
(LAPACK on the spectrum's rows; padding or stacking changes its sums), and the two squared-error
sums (numpy's pairwise summation; ``np.add.reduceat`` sums sequentially and differs in the last
bits).
"""

from __future__ import annotations

import numpy as np

from .null_marking import (
    CONSTANT_PREFERENCE,
    MAX_MODEL_DELTA,
    MIN_REGRESSION_POINTS,
    second_median,
)

__all__ = [
    "concatenated_weights",
    "constant_preferred",
    "fit_concatenated",
    "fit_delta_models",
    "second_medians",
]


def _weights(intensities: list[np.ndarray | None], lengths: np.ndarray) -> np.ndarray:
    """Row weights ``sqrt(ln(intensity + 1))`` of every spectrum, concatenated (float64).

    Each intensity's own float precision is kept (spectra are grouped by dtype), as the
    single-spectrum fit computes them; 1.0 without intensities, 0.0 where undefined."""
    weights = np.ones(int(lengths.sum()), dtype=np.float64)
    starts = np.cumsum(lengths) - lengths
    present = [k for k, intensity in enumerate(intensities) if intensity is not None]
    sizes = np.array([intensities[k].shape[0] for k in present], dtype=np.int64)
    wrong = np.flatnonzero(sizes != lengths[present])
    if wrong.size:
        k = present[int(wrong[0])]
        raise ValueError(  # the readers pair them first (readers/binary.check_paired)
            f"intensity array has {sizes[wrong[0]]} points but the m/z array has {lengths[k]}"
        )
    groups: dict[np.dtype, list[int]] = {}
    for k in present:
        kind = intensities[k].dtype
        groups.setdefault(kind if kind.kind == "f" else np.dtype(np.float64), []).append(k)
    for dtype, members in groups.items():
        computed = concatenated_weights(
            np.concatenate([intensities[k] for k in members]).astype(dtype, copy=False)
        )
        if len(members) == len(intensities):  # one precision for all: already in place
            return computed
        member_lengths = lengths[members]
        positions = np.repeat(
            starts[members] - (np.cumsum(member_lengths) - member_lengths), member_lengths
        ) + np.arange(computed.size)
        weights[positions] = computed
    return weights


def fit_delta_models(
    mzs: list[np.ndarray], intensities: list[np.ndarray | None]
) -> list[list[float]]:
    """The ``mz_delta_model`` of each spectrum (``mzs[k]``, ``intensities[k]``: its arrays
    before zero-run stripping, intensities as stored), as lists of floats."""
    if not mzs:
        return []
    lengths = np.array([mz.shape[0] for mz in mzs], dtype=np.int64)
    return fit_concatenated(
        np.concatenate(mzs, dtype=np.float64), _weights(intensities, lengths), lengths
    )


def concatenated_weights(intensity: np.ndarray) -> np.ndarray:
    """The row weights of spectra whose intensities (all of one dtype) are laid end to end:
    :func:`_weights` of the same spectra, without splitting and joining them again."""
    dtype = intensity.dtype if intensity.dtype.kind == "f" else np.dtype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        computed = np.sqrt(np.log(intensity.astype(dtype, copy=False) + 1)).astype(np.float64)
    return np.where(np.isfinite(computed), computed, 0.0)


def fit_concatenated(
    mz_all: np.ndarray, weights: np.ndarray, lengths: np.ndarray
) -> list[list[float]]:
    """:func:`fit_delta_models` of spectra laid end to end: their m/z values as float64,
    their row weights (:func:`concatenated_weights`), their lengths."""
    # Spacings of the concatenation: spectrum k's are deltas[starts[k] : starts[k] + spans[k]];
    # the spacing across two spectra sits between them and belongs to neither. Infinite m/z
    # values give infinite or NaN spacings, taken as the single fit takes them: no warning.
    with np.errstate(over="ignore", invalid="ignore"):
        deltas = np.diff(mz_all)
    starts = np.cumsum(lengths) - lengths
    spans = np.maximum(lengths - 1, 0)
    inside = np.ones(deltas.shape[0], dtype=bool)
    ends = (starts + lengths)[(lengths > 0) & (starts + lengths < mz_all.shape[0])]
    inside[ends - 1] = False
    usable = (deltas <= MAX_MODEL_DELTA) & inside
    before = np.concatenate([[0], np.cumsum(usable)])
    first_row = before[np.minimum(starts, deltas.shape[0])]
    n_usable = before[np.minimum(starts + spans, deltas.shape[0])] - first_row
    constants = second_medians(deltas, starts, spans)
    models: list[list[float]] = [[c] for c in constants.tolist()]
    coefficients, fitted = _quadratics(
        mz_all, weights, deltas, np.flatnonzero(usable), n_usable, first_row
    )
    if fitted.any():
        _prefer(models, coefficients, fitted, constants, mz_all, deltas, lengths, starts, spans)
    return models


# Runs longer than this are selected one at a time (two partial sorts and a count, linear in
# the run) instead of being sorted as matrix rows: for bench_scale's 102 MB profile run
# (small.mzML x30), whose spectra have 850 spacings at the median and 19,800 at the 90th
# percentile, 0.07 s instead of 0.22 s; for runs of a few hundred (FeatureFinderMetaboIdent's)
# the calls a run cost more than the sort.
SELECTED_SPAN = 1024


def second_medians(
    deltas: np.ndarray, starts: np.ndarray, spans: np.ndarray, selected_span: int = SELECTED_SPAN
) -> np.ndarray:
    """:func:`~mzpeak_dask.transforms.null_marking.second_median` of every run
    ``deltas[starts[k] : starts[k] + spans[k]]``, bit for bit: runs of similar length are
    sorted together as the rows of one matrix (padded with +inf), and the medians are read
    at numpy's positions with numpy's arithmetic (a NaN anywhere makes the run's NaN). Runs
    longer than ``selected_span`` each go to ``second_median`` itself, which selects."""
    result = np.zeros(spans.shape[0])
    long = spans > selected_span
    present = np.flatnonzero((spans > 0) & ~long)
    for k in np.flatnonzero(long).tolist():
        result[k] = second_median(deltas[starts[k] : starts[k] + spans[k]])
    if present.size == 0:
        return result
    bucket = np.ceil(np.log2(spans[present])).astype(np.int64)
    for b in np.unique(bucket).tolist():
        rows = present[bucket == b]
        counts = spans[rows]
        width = int(counts.max())
        real = np.arange(width) < counts[:, None]
        picked = np.where(
            real, deltas[np.where(real, starts[rows, None] + np.arange(width), 0)], np.inf
        )
        nan = np.isnan(picked)
        has_nan = nan.any(axis=1)
        picked[nan] = np.inf
        picked.sort(axis=1)
        first = _middle_of_prefix(picked, counts)
        below = np.count_nonzero(real & (picked <= first[:, None]), axis=1)
        second = _middle_of_prefix(picked, np.maximum(below, 1))
        result[rows] = np.where(has_nan | (below == 0), np.nan, second)
    return result


def _middle_of_prefix(rows: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """numpy's median of each sorted row's first ``counts`` values: the middle value plus +0.0,
    or ``(0.0 + low + high) / 2`` for an even count (np.mean's sum of the middle pair)."""
    at = np.arange(rows.shape[0])
    low = rows[at, (counts - 1) // 2]
    high = rows[at, counts // 2]
    with np.errstate(invalid="ignore", over="ignore"):
        even = (0.0 + low + high) / 2.0
    return np.where(counts % 2 == 1, 0.0 + high, even)


def _quadratics(
    mz_all: np.ndarray,
    weights: np.ndarray,
    deltas: np.ndarray,
    usable: np.ndarray,
    rows: np.ndarray,
    row_starts: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The weighted quadratic of every spectrum with enough usable spacings (spectrum k's rows
    are the spacings ``usable[row_starts[k] : row_starts[k] + rows[k]]``), by QR of its own
    rows as the single-spectrum fit solves it: spectra with the same number of rows are
    factorised in one stacked call (numpy runs LAPACK on each matrix of the stack, so every
    matrix gets its own factorisation, bit for bit). Returns the coefficients of every spectrum
    (one row each) and which were fitted: singular or non-finite fits are left out.

    The candidates' rows are gathered once, group after group (spectra sorted by row count),
    and weighted in one pass, so that each group's stack is a slice of one array."""
    coefficients = np.zeros((rows.shape[0], 3))
    fitted = np.zeros(rows.shape[0], dtype=bool)
    candidates = np.flatnonzero(rows >= MIN_REGRESSION_POINTS)
    candidates = candidates[np.argsort(rows[candidates], kind="stable")]
    counts = rows[candidates]
    ends = np.cumsum(counts)
    total = int(ends[-1]) if ends.size else 0
    take = np.repeat(row_starts[candidates] - (ends - counts), counts) + np.arange(total)
    spacing = usable[take]  # spacing i pairs mz[i + 1] with mz[i + 1] - mz[i]
    x, w = mz_all[spacing + 1], weights[spacing + 1]
    with np.errstate(invalid="ignore", over="ignore"):
        stacked_design = np.empty((total, 3))  # rows (1, x, x**2) weighted by w
        stacked_design[:, 0] = w  # 1.0 * w
        np.multiply(x, w, out=stacked_design[:, 1])
        np.multiply(x**2, w, out=stacked_design[:, 2])
        stacked_rhs = deltas[spacing] * w
    edges = [0, *(np.flatnonzero(counts[1:] != counts[:-1]) + 1).tolist(), candidates.shape[0]]
    triangles, projections = [], []
    with np.errstate(all="ignore"):
        for first, stop in zip(edges[:-1], edges[1:], strict=True):
            if first == stop:
                continue
            m = int(counts[first])
            rows_of = slice(int(ends[first] - m), int(ends[stop - 1]))
            q, r = np.linalg.qr(stacked_design[rows_of].reshape(stop - first, m, 3))
            group_rhs = stacked_rhs[rows_of].reshape(stop - first, m)
            projections.append(np.swapaxes(q, 1, 2) @ group_rhs[:, :, None])
            triangles.append(r)
    if not triangles:
        return coefficients, fitted
    # every factorisation's triangular solve in one stacked call (LAPACK on each, as above)
    r, projected = np.concatenate(triangles), np.concatenate(projections)
    regular = np.all(np.diagonal(r, axis1=1, axis2=2) != 0, axis=1)
    solved = np.linalg.solve(r[regular], projected[regular])[:, :, 0]
    finite = np.all(np.isfinite(solved), axis=1)
    members = candidates[regular][finite]
    coefficients[members] = solved[finite]
    fitted[members] = True
    return coefficients, fitted


def _prefer(
    models: list[list[float]],
    coefficients: np.ndarray,
    fitted: np.ndarray,
    constants: np.ndarray,
    mz_all: np.ndarray,
    deltas: np.ndarray,
    lengths: np.ndarray,
    starts: np.ndarray,
    spans: np.ndarray,
) -> None:
    """Replace the constant by the quadratic (``coefficients``, where ``fitted``) where its error
    is not ten times smaller. Both errors pair mz[i] with mz[i+1] - mz[i] over every spacing of
    the spectrum; the residuals are computed at once, and :func:`constant_preferred` compares
    the sums."""
    fitted = np.flatnonzero(fitted)
    b0, b1, b2 = (np.repeat(coefficients[:, j], lengths)[:-1] for j in range(3))
    x = mz_all[:-1]
    with np.errstate(invalid="ignore", over="ignore"):
        predicted = b0 + b1 * x
        predicted = predicted + b2 * x**2
        quadratic_residual = (predicted - deltas) ** 2
        constant_residual = (np.repeat(constants, lengths)[:-1] - deltas) ** 2
    constant = constant_preferred(
        constant_residual, quadratic_residual, starts[fitted], spans[fitted]
    )
    chosen = fitted[~constant]
    for k, model in zip(chosen.tolist(), coefficients[chosen].tolist(), strict=True):
        models[k] = model


def constant_preferred(
    constant_residual: np.ndarray,
    quadratic_residual: np.ndarray,
    starts: np.ndarray,
    spans: np.ndarray,
) -> np.ndarray:
    """Per run ``starts[k] : starts[k] + spans[k]`` (``spans`` >= 1), whether the sum of the
    constant's squared residuals is below a tenth of the quadratic's, decided as numpy's
    pairwise sums of each run decide it.

    Sequential sums of all runs at once (``np.add.reduceat``) settle it wherever the two sides
    are further apart than both summations' rounding can move them: for non-negative terms each
    sum is within ``(n - 1) * 2**-53`` of the exact one, relatively, and the margin is taken four
    times as wide. Runs closer than that, or with a non-finite sum, are summed as numpy does."""
    bounds = np.empty(2 * starts.shape[0], dtype=np.int64)
    bounds[0::2] = starts
    bounds[1::2] = starts + spans
    with np.errstate(invalid="ignore", over="ignore"):
        quick_constant = np.add.reduceat(np.append(constant_residual, 0.0), bounds)[0::2]
        quick_quadratic = np.add.reduceat(np.append(quadratic_residual, 0.0), bounds)[0::2]
        threshold = quick_quadratic / CONSTANT_PREFERENCE
        margin = (spans + 2) * 2.0**-51 * (quick_constant + threshold)
        preferred = quick_constant < threshold
        sure = (
            np.isfinite(quick_constant)
            & np.isfinite(quick_quadratic)
            & (np.abs(quick_constant - threshold) > margin)
        )
    for j in np.flatnonzero(~sure).tolist():
        run = slice(starts[j], starts[j] + spans[j])
        error_constant = np.add.reduce(constant_residual[run])  # np.sum, without its wrapper
        error_quadratic = np.add.reduce(quadratic_residual[run])
        preferred[j] = error_constant < error_quadratic / CONSTANT_PREFERENCE
    return preferred
