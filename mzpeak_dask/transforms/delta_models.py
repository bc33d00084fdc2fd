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

from ..errors import InputError
from .null_marking import (
    CONSTANT_PREFERENCE,
    MAX_MODEL_DELTA,
    MIN_REGRESSION_POINTS,
    second_median,
)

__all__ = ["fit_delta_models"]


def _weights(intensities: list[np.ndarray | None], lengths: np.ndarray) -> np.ndarray:
    """Row weights ``sqrt(ln(intensity + 1))`` of every spectrum, concatenated (float64).

    Each intensity's own float precision is kept (spectra are grouped by dtype), as the
    single-spectrum fit computes them; 1.0 without intensities, 0.0 where undefined."""
    weights = np.ones(int(lengths.sum()), dtype=np.float64)
    starts = np.cumsum(lengths) - lengths
    groups: dict[np.dtype, list[int]] = {}
    for k, intensity in enumerate(intensities):
        if intensity is None:
            continue
        if intensity.shape[0] != lengths[k]:
            raise InputError(
                f"intensity array has {intensity.shape[0]} points but the m/z array has "
                f"{lengths[k]}"
            )
        dtype = intensity.dtype if np.issubdtype(intensity.dtype, np.floating) else np.float64
        groups.setdefault(np.dtype(dtype), []).append(k)
    for dtype, members in groups.items():
        values = np.concatenate([intensities[k] for k in members]).astype(dtype, copy=False)
        with np.errstate(invalid="ignore", divide="ignore"):
            computed = np.sqrt(np.log(values + 1)).astype(np.float64)
        computed = np.where(np.isfinite(computed), computed, 0.0)
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
    mzs = [np.asarray(mz, dtype=np.float64) for mz in mzs]
    lengths = np.array([mz.shape[0] for mz in mzs], dtype=np.int64)
    mz_all = np.concatenate(mzs)
    weights = _weights(intensities, lengths)
    spans = np.maximum(lengths - 1, 0)  # spacings per spectrum
    point_starts = np.cumsum(lengths) - lengths
    left = np.repeat(point_starts, spans) + (
        np.arange(int(spans.sum())) - np.repeat(np.cumsum(spans) - spans, spans)
    )  # the first point of every spacing
    deltas = mz_all[left + 1] - mz_all[left]
    owner = np.repeat(np.arange(len(mzs)), spans)
    usable = deltas <= MAX_MODEL_DELTA
    n_usable = np.bincount(owner[usable], minlength=len(mzs))
    x = mz_all[left + 1][usable]
    w = weights[left + 1][usable]
    design = np.stack([np.ones_like(x), x, x**2], axis=1) * w[:, None]
    rhs = deltas[usable] * w
    delta_starts = np.cumsum(spans) - spans
    constants = [
        second_median(deltas[start : start + span])
        for start, span in zip(delta_starts, spans, strict=True)
    ]
    models: list[list[float]] = [[constant] for constant in constants]
    betas = _quadratics(design, rhs, n_usable, np.cumsum(n_usable) - n_usable)
    if betas:
        _prefer(models, betas, constants, mz_all[left], deltas, owner, delta_starts, spans)
    return models


def _quadratics(
    design: np.ndarray, rhs: np.ndarray, rows: np.ndarray, row_starts: np.ndarray
) -> dict[int, np.ndarray]:
    """The weighted quadratic of every spectrum with enough usable spacings, by QR of its own
    rows as the single-spectrum fit solves it: spectra with the same number of rows are
    factorised in one stacked call (numpy runs LAPACK on each matrix of the stack, so every
    matrix gets its own factorisation, bit for bit). Singular or non-finite fits are left out."""
    betas: dict[int, np.ndarray] = {}
    candidates = np.flatnonzero(rows >= MIN_REGRESSION_POINTS)
    for m in np.unique(rows[candidates]):
        members = candidates[rows[candidates] == m]
        take = row_starts[members][:, None] + np.arange(m)
        q, r = np.linalg.qr(design[take])
        regular = np.all(np.diagonal(r, axis1=1, axis2=2) != 0, axis=1)
        if not regular.any():
            continue
        members, q, r = members[regular], q[regular], r[regular]
        projected = np.swapaxes(q, 1, 2) @ rhs[take[regular]][:, :, None]
        solved = np.linalg.solve(r, projected)[:, :, 0]
        finite = np.all(np.isfinite(solved), axis=1)
        betas.update(zip(members[finite].tolist(), solved[finite], strict=True))
    return betas


def _prefer(
    models: list[list[float]],
    betas: dict[int, np.ndarray],
    constants: list[float],
    left_mz: np.ndarray,
    deltas: np.ndarray,
    owner: np.ndarray,
    delta_starts: np.ndarray,
    spans: np.ndarray,
) -> None:
    """Replace the constant by the quadratic where its error is not ten times smaller."""
    fitted = np.array(sorted(betas))
    has = np.zeros(len(models), dtype=bool)
    has[fitted] = True
    rows = has[owner]
    coefficients = np.zeros((len(models), 3))
    coefficients[fitted] = np.array([betas[k] for k in fitted])
    at = owner[rows]
    x = left_mz[rows]
    predicted = np.full_like(x, 0.0)
    predicted[:] = coefficients[at, 0]
    predicted = predicted + coefficients[at, 1] * x
    predicted = predicted + coefficients[at, 2] * x**2
    picked = deltas[rows]
    quadratic_residual = (predicted - picked) ** 2
    constant_residual = (np.asarray(constants)[at] - picked) ** 2
    starts = np.cumsum(spans[fitted]) - spans[fitted]
    for j, k in enumerate(fitted):
        piece = slice(starts[j], starts[j] + spans[k])
        error_constant = np.sum(constant_residual[piece])
        error_quadratic = np.sum(quadratic_residual[piece])
        if not error_constant < error_quadratic / CONSTANT_PREFERENCE:
            models[k] = betas[k].tolist()
