"""Zero-run stripping of profile spectra (format document §5.1).

A *zero run* is a stretch of consecutive zero intensities. Inside a run only the flanks carry
information (they mark where a peak starts and ends), so the writer removes the interior points from
every parallel array. The rule is the one of the reference ``find_where_not_zero_run``
(``HUPO-PSI/mzPeak-specification:docs/layouts/signal-data.md``, Rust ``_skip_zero_runs_gen``):

* a zero at index ``i`` is dropped when it is preceded by a zero (or is the first point) **and**
  followed by a zero (or is the last point);
* hence an interior run of three or more zeros keeps its first and last point;
* a run touching the start keeps only its last zero (a lone leading zero stays);
* a run touching the end keeps only its first zero (a lone trailing zero stays);
* an array made only of zeros loses every point, and so does the one-point array ``[0]``.

Stripping needs no decoding step: readers see an ordinary, shorter spectrum.
"""

from __future__ import annotations

import numpy as np

from .runs import run_edges

__all__ = ["apply_keep_mask", "strip_zero_runs", "zero_run_keep_mask", "zero_run_keep_masks"]


def zero_run_keep_mask(intensity: np.ndarray) -> np.ndarray:
    """Return a boolean mask, True where a point survives zero-run stripping.

    ``intensity`` is any 1-d numeric array; NaN counts as non-zero. The mask has the same length,
    so it can be applied to every array parallel to the intensity array.
    """
    is_zero = np.asarray(intensity) == 0
    n = is_zero.shape[0]
    # "previous is zero" with the first position counting as such (the reference's empty
    # accumulator: every point before a leading zero was itself a dropped zero).
    after_zero = np.ones(n, dtype=bool)
    after_zero[1:] = is_zero[:-1]
    # "next is zero" with the last position counting as such.
    before_zero = np.ones(n, dtype=bool)
    before_zero[:-1] = is_zero[1:]
    return ~(is_zero & after_zero & before_zero)


def apply_keep_mask(keep: np.ndarray, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Select the kept points from every parallel array (all of the mask's length)."""
    return tuple(np.asarray(array)[keep] for array in arrays)


def strip_zero_runs(
    intensity: np.ndarray, *arrays: np.ndarray
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Strip zero runs from ``intensity`` and every parallel array in one call.

    Returns the stripped intensity and the stripped parallel arrays, in the given order.
    """
    keep = zero_run_keep_mask(intensity)
    stripped = apply_keep_mask(keep, intensity, *arrays)
    return stripped[0], stripped[1:]


def zero_run_keep_masks(intensity: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """:func:`zero_run_keep_mask` of every run of a concatenation (see
    :mod:`~mzpeak_dask.transforms.runs`) in one pass; a run's first and last points are its
    ends, whatever its neighbours in the concatenation hold."""
    is_zero = np.asarray(intensity) == 0
    first, last = run_edges(lengths)
    after_zero = first.copy()
    after_zero[1:] |= is_zero[:-1]
    before_zero = last.copy()
    before_zero[:-1] |= is_zero[1:]
    return ~(is_zero & after_zero & before_zero)
