"""Vectorised numpy kernels of the chromatogram analysis (no I/O, no Dask).

Points arrive as flat arrays (``mz``, ``intensity``) with a segment id per point (the position
of the point's spectrum in the selection); every function is a handful of whole-array
operations, whatever the number of spectra or targets.
"""

from __future__ import annotations

import numpy as np

from ..errors import OptionsError


def ppm_windows(targets: np.ndarray, ppm: float) -> tuple[np.ndarray, np.ndarray]:
    """Inclusive m/z windows ``target * (1 -/+ ppm 1e-6)``."""
    targets = np.asarray(targets, dtype=np.float64)
    if targets.ndim != 1 or not len(targets):
        raise OptionsError("give at least one target m/z")
    if not (np.isfinite(ppm) and ppm > 0):
        raise OptionsError(f"the ppm tolerance must be positive, got {ppm!r}")
    if not np.all(np.isfinite(targets) & (targets > 0)):
        raise OptionsError("target m/z values must be positive numbers")
    delta = targets * ppm * 1e-6
    return targets - delta, targets + delta


def select_spectra(
    time: np.ndarray,
    ms_level: np.ndarray,
    rt: tuple[float, float] | None = None,
    level: int | None = 1,
) -> np.ndarray:
    """Indices of the spectra of MS level ``level`` (None: all) with ``rt[0] <= time <=
    rt[1]`` (minutes; None: any time)."""
    keep = np.ones(len(time), dtype=bool)
    if level is not None:
        keep &= np.asarray(ms_level) == level
    if rt is not None:
        low, high = rt
        if low > high:
            raise OptionsError(f"the RT range is empty: {low} > {high}")
        time = np.asarray(time, dtype=np.float64)
        keep &= (time >= low) & (time <= high)
    return np.flatnonzero(keep)


def merged(low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of the intervals ``[low, high]`` (NaN ones left out) as disjoint intervals,
    sorted."""
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    ok = ~(np.isnan(low) | np.isnan(high)) & (low <= high)
    low, high = low[ok], high[ok]
    if not len(low):
        return low, high
    order = np.argsort(low, kind="stable")
    low, high = low[order], np.maximum.accumulate(high[order])
    start = np.r_[True, low[1:] > high[:-1]]
    ends = np.r_[np.flatnonzero(start)[1:] - 1, len(low) - 1]
    return low[start], high[ends]


def overlapping(
    start: np.ndarray, end: np.ndarray, low: np.ndarray, high: np.ndarray
) -> np.ndarray:
    """Which intervals ``[start, end]`` meet at least one window ``[low, high]``: one binary
    search per interval among the merged windows, whatever their number. NaN bounds never
    match."""
    lows, highs = merged(low, high)
    start, end = np.asarray(start, np.float64), np.asarray(end, np.float64)
    hit = np.zeros(len(start), dtype=bool)
    if not len(lows):
        return hit
    j = np.searchsorted(highs, start, side="left")  # the first merged window ending >= start
    inside = j < len(highs)  # a NaN start sorts past the end
    hit[inside] = lows[j[inside]] <= end[inside]  # a NaN end compares False
    return hit


def _window_groups(low: np.ndarray, high: np.ndarray) -> list[np.ndarray]:
    """Split the windows into groups of pairwise disjoint windows, each sorted by ``low``
    (one group unless targets lie within two tolerances of each other)."""
    groups: list[list[int]] = []
    ends: list[float] = []
    for t in np.argsort(low, kind="stable").tolist():
        g = next((k for k, end in enumerate(ends) if end < low[t]), None)
        if g is None:
            groups.append([t])
            ends.append(high[t])
        else:
            groups[g].append(t)
            ends[g] = high[t]
    return [np.asarray(g, dtype=np.int64) for g in groups]


def window_sums(
    mz: np.ndarray,
    intensity: np.ndarray,
    segment: np.ndarray,
    segments: int,
    low: np.ndarray,
    high: np.ndarray,
) -> np.ndarray:
    """``(segments, targets)`` sums of the intensities with ``low[t] <= mz <= high[t]``.

    Points grouped by segment with m/z ascending inside each (what every mzPeak source gives)
    take a binary search per segment; any other order a binary search per point."""
    mz = np.asarray(mz, dtype=np.float64)
    weights = np.asarray(intensity, dtype=np.float64)
    segment = np.asarray(segment, dtype=np.int64)
    step = np.diff(segment)
    if np.all(step >= 0) and np.all((np.diff(mz) >= 0) | (step > 0)):
        offsets = np.searchsorted(segment, np.arange(segments + 1), side="left")
        return _sorted_sums(mz, weights, offsets, low, high)
    return _unsorted_sums(mz, weights, segment, segments, low, high)


def _sorted_sums(
    mz: np.ndarray, weights: np.ndarray, offsets: np.ndarray, low: np.ndarray, high: np.ndarray
) -> np.ndarray:
    """Each segment is sorted: two binary searches per segment (a loop over segments) give
    every window's index range; ``np.add.reduceat`` sums all ranges at once."""
    segments, targets = len(offsets) - 1, len(low)
    first = np.empty((segments, targets), dtype=np.int64)
    stop = np.empty((segments, targets), dtype=np.int64)
    for k in range(segments):
        a, b = offsets[k], offsets[k + 1]
        first[k] = a + np.searchsorted(mz[a:b], low, side="left")
        stop[k] = a + np.searchsorted(mz[a:b], high, side="right")
    out = np.zeros(segments * targets)
    first, stop = first.ravel(), stop.ravel()
    hit = np.flatnonzero(stop > first)
    if len(hit):
        bounds = np.column_stack((first[hit], stop[hit])).ravel()
        out[hit] = np.add.reduceat(np.append(weights, 0.0), bounds)[::2]
    return out.reshape(segments, targets)


def _unsorted_sums(
    mz: np.ndarray,
    weights: np.ndarray,
    segment: np.ndarray,
    segments: int,
    low: np.ndarray,
    high: np.ndarray,
) -> np.ndarray:
    """Any order: each point finds its window by one binary search per group of disjoint
    windows."""
    targets = len(low)
    out = np.zeros(segments * targets, dtype=np.float64)
    for group in _window_groups(low, high):
        j = np.searchsorted(low[group], mz, side="right") - 1
        j_safe = np.maximum(j, 0)
        inside = (j >= 0) & (mz <= high[group][j_safe])
        key = segment[inside] * targets + group[j_safe[inside]]
        out += np.bincount(key, weights=weights[inside], minlength=segments * targets)
    return out.reshape(segments, targets)


# at most this many windows are looked for one mask per window (two comparisons per point
# each, about 4.5 ms per 4 M points); more take one binary search per point and group of
# disjoint windows (about 40 ms per 4 M points, whatever their number). One target over the
# 1 GB run of tests/benchmarks/bench_archive_xic.py: one-thread XIC 1.37 s against 2.10 s
# (best of 5, interleaved)
FEW_WINDOWS = 8


def window_hits(mz: np.ndarray, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(positions, windows)``: every point with ``low[t] <= mz <= high[t]``, once per window
    ``t`` it is in (a NaN m/z is in none), by window then position."""
    positions, windows = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    if len(low) <= FEW_WINDOWS:
        for t, (a, b) in enumerate(zip(low.tolist(), high.tolist(), strict=True)):
            hit = np.flatnonzero((mz >= a) & (mz <= b))
            positions.append(hit)
            windows.append(np.full(len(hit), t, np.int64))
        return np.concatenate(positions), np.concatenate(windows)
    for group in _window_groups(low, high):
        lows, highs = low[group], high[group]
        j = np.searchsorted(lows, mz, side="right") - 1
        hit = np.flatnonzero(mz <= highs[np.maximum(j, 0)])  # NaN m/z compares False
        hit = hit[j[hit] >= 0]
        positions.append(hit)
        windows.append(group[j[hit]])
    return np.concatenate(positions), np.concatenate(windows)


def hit_sums(
    item: np.ndarray,
    intensity: np.ndarray,
    window: np.ndarray,
    ids: np.ndarray,
    targets: int,
) -> np.ndarray:
    """``(len(ids), targets)`` sums of the intensities of points in windows, given per point
    its item and window; points of items not in ``ids`` (sorted) and NaN intensities add
    nothing."""
    out = np.zeros(len(ids) * targets, dtype=np.float64)
    if len(ids) and len(item):
        found = np.asarray(item, dtype=np.int64)
        where = np.minimum(np.searchsorted(ids, found), len(ids) - 1)
        ours = ids[where] == found
        weights = np.nan_to_num(np.asarray(intensity, dtype=np.float64)[ours])
        key = where[ours] * targets + window[ours]
        out += np.bincount(key, weights=weights, minlength=len(out))
    return out.reshape(len(ids), targets)


def item_window_sums(
    mz: np.ndarray,
    intensity: np.ndarray,
    item: np.ndarray,
    ids: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
) -> np.ndarray:
    """``(len(ids), targets)`` sums of the intensities with ``low[t] <= mz <= high[t]``, per
    item id of ``ids`` (sorted), straight from stored columns in any order: points of other
    items and points with a NaN m/z or intensity (nulls) add nothing. Only the points inside a
    window are looked up by item, so the cost is a pass over the points per window (or one
    binary search per point and window group), whatever the number of spectra.
    """
    if not len(ids) or not len(mz):
        return np.zeros((len(ids), len(low)))
    hit, window = window_hits(np.asarray(mz), low, high)
    return hit_sums(np.asarray(item)[hit], np.asarray(intensity)[hit], window, ids, len(low))


def segment_stats(
    mz: np.ndarray, intensity: np.ndarray, segment: np.ndarray, segments: int
) -> np.ndarray:
    """``(segments, 3)``: total intensity, base peak m/z and base peak intensity per segment
    (the base peak is the first point of highest intensity; NaN for a segment without
    points). ``segment`` must be non-decreasing."""
    out = np.full((segments, 3), np.nan)
    weights = np.nan_to_num(np.asarray(intensity, dtype=np.float64))
    out[:, 0] = np.bincount(segment, weights=weights, minlength=segments)
    if not len(segment):
        return out
    present, starts = np.unique(segment, return_index=True)
    peak = np.maximum.reduceat(weights, starts)
    is_peak = weights == np.repeat(peak, np.diff(np.append(starts, len(segment))))
    first = np.flatnonzero(is_peak)
    _, where = np.unique(segment[first], return_index=True)
    out[present, 1] = np.asarray(mz, dtype=np.float64)[first[where]]
    out[present, 2] = peak
    return out


def compact(segment: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``table`` whose segment occurs, with their ids (small task results)."""
    present = np.unique(segment)
    return present, table[present]


def add_rows(total: np.ndarray, parts: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Sum partial ``(rows, values)`` results into ``total`` (in place)."""
    for rows, values in parts:
        np.add.at(total, rows, values)
    return total


__all__ = [
    "add_rows",
    "hit_sums",
    "item_window_sums",
    "compact",
    "merged",
    "overlapping",
    "ppm_windows",
    "select_spectra",
    "segment_stats",
    "window_hits",
    "window_sums",
]
