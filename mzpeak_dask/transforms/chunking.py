"""Cutting a sorted, null-marked main axis into chunks (format document §5.3).

The thresholds are ``start + k*width`` with ``start`` the first non-null value, as in the reference
``null_chunk_every`` (``HUPO-PSI/mzPeak-specification:docs/layouts/chunked-layout.md``). What that
function does, and what we keep of it:

* The first non-null value lying beyond the current threshold opens a new chunk, and the threshold
  moves to the first ``start + k*width`` at or above that value. Values are sorted, so a value
  triggers a cut exactly when its bin ``k`` (smallest ``k >= 1`` with ``value <= start + k*width``)
  is larger than the bin of the previous non-null value.
* Where the cut goes depends on the trigger's neighbours, so that every null stays in the chunk of
  the segment it flanks and each chunk can be null-filled on its own:

  - inside a segment (non-null on both sides): the cut is just before the trigger;
  - first value of a segment (a null before it): the cut is before that left-flank null;
  - last value of a segment (non-null before, null after): the trigger stays in the old chunk
    with its right-flank null; the cut is at the last null of the following null run.

  A null pair is therefore cut between its two nulls, never between a null and its value. (The
  format document words this as "no null pair is split"; what the reference does, and what we do,
  is split the pair at its middle.)
* The reference skips a cut that would leave a one-point chunk. We generalise: a cut is kept only
  when the chunk it closes holds at least ``min_points`` non-null values, and a short last chunk is
  merged into the one before it. So with ``min_points=2`` no chunk has a single non-null value,
  unless the whole array has fewer than two. A cut that would leave only nulls after it (the
  reference can emit a trailing chunk holding a single null) is never made.

Offsets are int64, start with 0 and end with ``len(values)``; chunk ``j`` is
``values[offsets[j]:offsets[j+1]]``. An empty array gives ``array([0])`` (no chunk at all).
"""

from __future__ import annotations

import numpy as np

from ..errors import OptionsError
from .runs import owners, run_starts

__all__ = ["chunk_boundaries", "chunk_boundaries_of_runs", "chunk_bounds"]


def _bins(values: np.ndarray, start: float | np.ndarray, width: float) -> np.ndarray:
    """Smallest ``k >= 1`` with ``value <= start + k*width``, with float rounding corrected."""
    k = np.maximum(np.ceil((values - start) / width), 1.0)
    k = np.where(values > start + k * width, k + 1, k)
    k = np.where((k > 1) & (values <= start + (k - 1) * width), k - 1, k)
    return k


def _candidate_cuts(valid: np.ndarray, triggers: np.ndarray) -> np.ndarray:
    """Cut position for every trigger index, following the reference's null handling."""
    n = valid.shape[0]
    null_before = ~valid[triggers - 1]
    after = np.minimum(triggers + 1, n - 1)
    null_after = (triggers + 1 < n) & ~valid[after]
    # position of the last null of the null run that starts right after each trigger
    next_valid = np.flatnonzero(valid)
    following = np.searchsorted(next_valid, triggers, side="right")
    run_end = np.where(
        following < next_valid.size, next_valid[np.minimum(following, next_valid.size - 1)] - 1, n
    )
    return np.where(null_before, triggers - 1, np.where(null_after, run_end, triggers))


def _enforce_min_points(cuts: np.ndarray, counts: np.ndarray, min_points: int) -> list[int]:
    """Greedily drop cuts that would close a chunk with fewer than ``min_points`` non-null
    values (``counts[i]``: non-null values before point i); a loop over chunks, not points."""
    total = int(counts[-1])
    kept = [0]
    for cut in cuts.tolist():
        if counts[cut] - counts[kept[-1]] >= min_points and total - counts[cut] > 0:
            kept.append(cut)
    while len(kept) > 1 and total - counts[kept[-1]] < min_points:
        kept.pop()  # merge a short last chunk into the previous one
    return kept


def chunk_boundaries(
    values: np.ndarray, valid: np.ndarray, width: float, *, min_points: int = 2
) -> np.ndarray:
    """Split offsets of a sorted main axis into chunks of ``width`` axis units (see module doc).

    ``min_points`` is the least number of non-null values per chunk. An empty array gives
    ``array([0])``; an array without any non-null value, or with fewer than ``min_points``, is one
    chunk. Raises :class:`~mzpeak_dask.errors.OptionsError` for a non-positive width.
    """
    _check(width, min_points)
    values = np.asarray(values, dtype=np.float64)
    valid = np.asarray(valid, dtype=bool)
    n = values.shape[0]
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    valid_index = np.flatnonzero(valid)
    if valid_index.size == 0:
        return np.array([0, n], dtype=np.int64)
    valid_values = values[valid_index]
    bins = _bins(valid_values, valid_values[0], width)
    triggers = valid_index[1:][bins[1:] > bins[:-1]]
    cuts = _candidate_cuts(valid, triggers)
    cuts = np.unique(cuts[(cuts > 0) & (cuts < n)])
    kept = _enforce_min_points(cuts, np.concatenate(([0], np.cumsum(valid))), min_points)
    return np.array([*kept, n], dtype=np.int64)


def _check(width: float, min_points: int) -> None:
    if not (np.isfinite(width) and width > 0):
        raise OptionsError(f"chunk width must be a positive number, got {width!r}")
    if min_points < 1:
        raise OptionsError(f"min_points must be at least 1, got {min_points!r}")


def chunk_boundaries_of_runs(
    values: np.ndarray,
    valid: np.ndarray,
    lengths: np.ndarray,
    width: float,
    *,
    min_points: int = 2,
) -> list[np.ndarray]:
    """:func:`chunk_boundaries` of every run of a concatenation (see
    :mod:`~mzpeak_dask.transforms.runs`), each run's offsets local to it: the bins, triggers
    and candidate cuts of all runs at once; only the greedy minimum-points pass walks the cuts,
    run by run."""
    _check(width, min_points)
    values = np.asarray(values, dtype=np.float64)
    valid = np.asarray(valid, dtype=bool)
    lengths = np.asarray(lengths, dtype=np.int64)
    starts = run_starts(lengths)
    run = owners(lengths)
    cuts = _cuts_of_runs(values, valid, run, starts, starts + lengths, width)
    counts = np.concatenate(([0], np.cumsum(valid)))
    by_run = np.searchsorted(cuts, starts + lengths)
    out, first = [], 0
    for k, n in enumerate(lengths.tolist()):
        last = int(by_run[k])
        if n == 0:
            out.append(np.zeros(1, dtype=np.int64))
        elif first == last:
            out.append(np.array([0, n], dtype=np.int64))
        else:
            start = int(starts[k])
            local = counts[start : start + n + 1] - counts[start]
            kept = _enforce_min_points(cuts[first:last] - start, local, min_points)
            out.append(np.array([*kept, n], dtype=np.int64))
        first = last
    return out


def _cuts_of_runs(
    values: np.ndarray,
    valid: np.ndarray,
    run: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    width: float,
) -> np.ndarray:
    """Every run's candidate cuts (see :func:`chunk_boundaries`), as ascending positions in
    the concatenation, none at a run's first point or end."""
    valid_index = np.flatnonzero(valid)
    if valid_index.size == 0:
        return np.zeros(0, dtype=np.int64)
    valid_run = run[valid_index]
    opens = np.concatenate(([True], valid_run[1:] != valid_run[:-1]))
    sizes = np.diff(np.concatenate((np.flatnonzero(opens), [valid_index.size])))
    valid_values = values[valid_index]
    start = np.repeat(valid_values[opens], sizes)
    bins = _bins(valid_values, start, width)
    rising = (bins[1:] > bins[:-1]) & ~opens[1:]
    triggers = valid_index[1:][rising]
    owner = run[triggers]
    end = ends[owner]
    null_before = ~valid[triggers - 1]
    after = np.minimum(triggers + 1, valid.shape[0] - 1)
    null_after = (triggers + 1 < end) & ~valid[after]
    following = np.searchsorted(valid_index, triggers, side="right")
    next_in_run = following < valid_index.size
    following = np.minimum(following, valid_index.size - 1)
    next_in_run &= valid_run[following] == owner
    run_end = np.where(next_in_run, valid_index[following] - 1, end)
    cuts = np.where(null_before, triggers - 1, np.where(null_after, run_end, triggers))
    return np.unique(cuts[(cuts > starts[owner]) & (cuts < end)])


def chunk_bounds(
    values: np.ndarray, valid: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """First and last non-null value of each chunk (NaN for a chunk without one).

    Unlike the reference, a chunk with a single non-null value gets ``end == start``, not 0.0.
    """
    values = np.asarray(values, dtype=np.float64)
    valid = np.asarray(valid, dtype=bool)
    offsets = np.asarray(offsets, dtype=np.int64)
    n_chunks = max(offsets.shape[0] - 1, 0)
    chunk_start = np.full(n_chunks, np.nan)
    chunk_end = np.full(n_chunks, np.nan)
    valid_index = np.flatnonzero(valid)
    chunk = np.searchsorted(offsets, valid_index, side="right") - 1
    # valid_index is ascending, so the first/last occurrence of each chunk id are its bounds
    first = np.searchsorted(chunk, np.arange(n_chunks), side="left")
    last = np.searchsorted(chunk, np.arange(n_chunks), side="right") - 1
    present = first <= last
    chunk_start[present] = values[valid_index[first[present]]]
    chunk_end[present] = values[valid_index[last[present]]]
    return chunk_start, chunk_end
