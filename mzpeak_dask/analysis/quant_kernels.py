"""Vectorised numpy kernels of targeted quantification (no I/O, no Dask).

Targets are sorted by the low end of their m/z window once; a batch of points is matched to
them with binary searches over the sorted points (:func:`match_points`), so the cost is a sort
of the batch's points that can lie in a window plus the (target, point) pairs found, whatever
the number of targets. :func:`point_figures` and :func:`chromatogram_figures` turn a run's
pairs into MINT's figures and the chromatographic view, again in whole-array operations.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .kernels import overlapping


def in_union(values: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Which values lie in at least one interval ``[low, high]`` (NaN in none)."""
    return overlapping(values, values, low, high)


def expand(first: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ``(k, i)`` with ``first[k] <= i < stop[k]``, as two arrays."""
    counts = np.maximum(stop - first, 0)
    k = np.repeat(np.arange(len(first)), counts)
    heads = np.cumsum(counts) - counts
    return k, np.arange(int(counts.sum())) - np.repeat(heads - first, counts)


def match_points(
    mz: np.ndarray,
    intensity: np.ndarray,
    time: np.ndarray,
    mean: np.ndarray,
    delta: np.ndarray,
    rt_min: np.ndarray,
    rt_max: np.ndarray,
    threshold: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``(targets, points)``: every pair with ``|mz - mean| <= delta``, ``rt_min <= time <=
    rt_max`` and ``intensity >= threshold`` (a point of zero or NaN intensity, or NaN m/z, is
    in none), in target then m/z order."""
    mz = np.asarray(mz, np.float64)
    # a little wider than the windows to find candidates; the exact test is made below
    slack = 1e-9 * mean
    low, high = mean - delta - slack, mean + delta + slack
    keep = np.flatnonzero((intensity > 0) & in_union(mz, low, high))
    order = keep[np.argsort(mz[keep], kind="stable")]
    ordered = mz[order]
    target, at = expand(
        np.searchsorted(ordered, low, side="left"), np.searchsorted(ordered, high, side="right")
    )
    point = order[at]
    t = time[point]
    good = np.abs(mz[point] - mean[target]) <= delta[target]
    good &= (t >= rt_min[target]) & (t <= rt_max[target])
    good &= intensity[point] >= threshold[target]
    return target[good], point[good]


def _group_starts(key: np.ndarray) -> np.ndarray:
    return np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if len(key) else np.zeros(0, int)


def _by_target(target: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(order, starts, counts)``: the pairs grouped by target (a stable sort, which costs
    little on pairs that come target by target, block after block, as :func:`match_points`
    gives them), where each target's group starts and how many pairs it holds."""
    order = np.argsort(target, kind="stable")
    starts = _group_starts(target[order])
    return order, starts, np.diff(np.r_[starts, len(order)])


def _maxima(
    values: np.ndarray, starts: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per group (runs of ``values`` from ``starts``) its maximum; and the positions in
    ``values`` that hold their group's maximum, in order."""
    high = np.maximum.reduceat(values, starts)
    return high, np.flatnonzero(values == np.repeat(high, counts))


def point_figures(
    targets: int,
    target: np.ndarray,
    spectrum: np.ndarray,
    mz: np.ndarray,
    intensity: np.ndarray,
    time: np.ndarray,
    mean: np.ndarray,
) -> dict[str, np.ndarray]:
    """MINT's figures per target from its points (``spectrum``: positions into ``time``, in
    run order): null where a target has no points. Only the pairs' targets are sorted; the
    medians are pandas' grouped medians, a selection within each group."""
    nan = np.full(targets, np.nan)
    out = {
        "peak_area": np.bincount(target, weights=intensity, minlength=targets),
        "peak_n_datapoints": np.bincount(target, minlength=targets).astype(np.int64),
    }
    for name in ("peak_max", "peak_min", "peak_mean", "peak_median", "peak_rt_of_max"):
        out[name] = nan.copy()
    out["peak_mass_diff_50pc"] = nan.copy()
    if not len(target):
        return out
    order, starts, counts = _by_target(target)
    t, v = target[order], intensity[order]
    present = t[starts]
    high, at = _maxima(v, starts, counts)
    out["peak_max"][present] = high
    out["peak_min"][present] = np.minimum.reduceat(v, starts)
    out["peak_mean"][present] = out["peak_area"][present] / counts
    # the time of the most intense point: the first in run order (spectrum, m/z) on ties
    at = order[at]
    at = at[np.lexsort((mz[at], spectrum[at], target[at]))]
    out["peak_rt_of_max"][present] = time[spectrum[at[_group_starts(target[at])]]]
    ppm = (mz[order] - mean[t]) / (mean[t] * 1e-6)
    medians = pd.DataFrame({"v": v, "ppm": ppm}).groupby(t, sort=True).median()
    out["peak_median"][present] = medians["v"].to_numpy()
    out["peak_mass_diff_50pc"][present] = medians["ppm"].to_numpy()
    return out


def chromatogram_figures(
    targets: int,
    target: np.ndarray,
    spectrum: np.ndarray,
    intensity: np.ndarray,
    time: np.ndarray,
    rt_min: np.ndarray,
    rt_max: np.ndarray,
) -> dict[str, np.ndarray]:
    """The XIC view per target: ``spectra`` in its RT window (of the spectra ``time``),
    the trapezoid ``area`` (minutes) of its per-spectrum sums with zeros where a spectrum has
    none, and the XIC's apex (first in time order on ties; no points: time null, intensity 0,
    or null without spectra)."""
    rank = np.argsort(time, kind="stable")
    times = time[rank]
    position = np.empty(len(time), np.int64)
    position[rank] = np.arange(len(time))
    first = np.searchsorted(times, rt_min, side="left")
    stop = np.searchsorted(times, rt_max, side="right")
    spectra = np.maximum(stop - first, 0)
    out = {
        "area": np.zeros(targets),
        "apex_time": np.full(targets, np.nan),
        "apex_intensity": np.where(spectra > 0, 0.0, np.nan),
        "spectra": spectra.astype(np.int64),
    }
    if not len(target):
        return out
    # the (target, spectrum) cells by hashing, then the cells (fewer) sorted by target and time
    order = np.argsort(target, kind="stable")  # grouped as in _by_target
    key = target[order] * len(time) + position[spectrum[order]]
    inverse, cells = pd.factorize(key)
    by_key = np.argsort(cells)
    cells, xic = cells[by_key], np.bincount(inverse, weights=intensity[order])[by_key]
    t, r = cells // len(time), cells % len(time)
    left = np.where(r - 1 >= first[t], times[r] - times[np.maximum(r - 1, 0)], 0.0)
    right_at = np.minimum(r + 1, len(times) - 1)
    right = np.where(r + 1 < stop[t], times[right_at] - times[r], 0.0)
    out["area"] = np.bincount(t, weights=xic * (left + right) / 2, minlength=targets)
    starts = _group_starts(t)
    high, at = _maxima(xic, starts, np.diff(np.r_[starts, len(t)]))
    heads = at[_group_starts(t[at])]  # cells in time order: the earliest at the maximum
    out["apex_time"][t[heads]] = times[r[heads]]
    out["apex_intensity"][t[heads]] = high
    return out


__all__ = [
    "chromatogram_figures",
    "expand",
    "in_union",
    "match_points",
    "point_figures",
]
