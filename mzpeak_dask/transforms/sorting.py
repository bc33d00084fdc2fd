"""The order of an item's points along its main axis (m/z, time, wavelength).

Sources do not always give points in main-axis order: ion-mobility spectra (timsTOF) list them
by mobility scan, so m/z restarts many times within a spectrum. An array index may only claim
the main axis sorted (``sorting_rank`` 0) when it is, and the specification says an array
with a sorting rank that is not sorted must be re-sorted (``docs/layouts/signal-data.md``). So:

* the point layout keeps the source order and the data member declares the main axis sorted
  only when every item of the run is (the reference writer's own fix does the same);
* the chunked layout, whose chunks are ranges of a sorted axis, puts each item's points in
  main-axis order and carries every other per-point array along (a stable sort: nothing is
  lost, points of equal m/z keep their source order).

Null (marked) points are ignored when judging the order.
"""

from __future__ import annotations

import numpy as np

from .runs import owners

__all__ = ["is_sorted", "runs_sorted", "sort_order"]


def is_sorted(values: np.ndarray, valid: np.ndarray | None = None) -> bool:
    """Whether the non-null ``values`` are in ascending (non-decreasing) order."""
    values = np.asarray(values)
    if valid is not None:
        values = values[np.asarray(valid, dtype=bool)]
    return bool(np.all(values[1:] >= values[:-1]))


def runs_sorted(values: np.ndarray, valid: np.ndarray | None, lengths: np.ndarray) -> np.ndarray:
    """:func:`is_sorted` of every run of a concatenation (see
    :mod:`~mzpeak_dask.transforms.runs`) at once: one bool per run."""
    values = np.asarray(values)
    run = owners(lengths)
    if valid is not None:
        valid = np.asarray(valid, dtype=bool)
        values, run = values[valid], run[valid]
    # a pair across two runs orders nothing; a NaN fails its comparison, as in is_sorted
    broken = ~(values[1:] >= values[:-1]) & (run[1:] == run[:-1])
    return np.bincount(run[1:][broken], minlength=len(lengths)) == 0


def sort_order(values: np.ndarray) -> np.ndarray | None:
    """The stable permutation that sorts ``values`` ascending, or None when they already are
    (NaN values go last)."""
    values = np.asarray(values)
    if not len(values) or is_sorted(values):
        return None
    return np.argsort(values, kind="stable")
