"""Many items' arrays laid end to end: the bookkeeping of a concatenation and its runs.

A partition's spectra are prepared at once over the concatenation of their arrays; ``lengths``
gives each item's number of points, so item ``k`` is ``values[starts[k] : starts[k] +
lengths[k]]``. Element-wise steps run once over everything; steps that look at a neighbour must
not look across two items, which :func:`run_edges` tells them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["owners", "run_any", "run_edges", "run_starts", "split_runs"]


def run_starts(lengths: np.ndarray) -> np.ndarray:
    """Where each run starts in the concatenation."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return np.cumsum(lengths) - lengths


def owners(lengths: np.ndarray) -> np.ndarray:
    """The run each position of the concatenation belongs to."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return np.repeat(np.arange(lengths.shape[0]), lengths)


def run_edges(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Masks over the concatenation: True at the first point of a run, and at the last."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    first = np.zeros(total, dtype=bool)
    last = np.zeros(total, dtype=bool)
    present = lengths > 0
    starts = run_starts(lengths)[present]
    first[starts] = True
    last[starts + lengths[present] - 1] = True
    return first, last


def run_any(mask: np.ndarray, run: np.ndarray, count: int) -> np.ndarray:
    """Per run, whether ``mask`` is True anywhere in it (``run``: :func:`owners`; ``count``
    runs)."""
    return np.bincount(run[mask], minlength=count) > 0


def split_runs(values: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    """The runs of a concatenation, as views."""
    bounds = np.cumsum(lengths).tolist()
    return [values[a:b] for a, b in zip([0, *bounds[:-1]], bounds, strict=True)]
