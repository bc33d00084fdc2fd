"""The "basic" chunk encoding, ``MS:1000576`` (no compression), format document §5.4.

A chunk's main-axis values are stored as they are, except that the start point, which the layout
keeps in ``<axis>_chunk_start``, is left out of ``<axis>_chunk_values``. Nulls are carried as a
value array plus a boolean ``valid`` mask (True = non-null).

The format's rule, whatever the first point holds: the values of points 1…n−1 are stored (nulls as
nulls) and ``start`` is the chunk's first non-null value; decoding is ``[start] + values``. A chunk
whose first point is null (the second null of a null pair, cut from the first by a chunk edge)
therefore decodes with ``start`` in that place: the layout's reader treats such a head as the
null it was when the point's intensity is null (:mod:`mzpeak_dask.layouts.chunked`), so the m/z is
rebuilt like any null-marked point's. (Mirroring the delta rule instead, a leading null kept as
a stored null, made a chunk's values as long as its intensities, which the reference readers
cannot decode.) ``size`` (the chunk's point count, the length of its secondary arrays, which the
layout always has) tells a chunk written by this rule from one written with a stored leading null
by earlier versions of this package; without it the format's rule is assumed.
"""

from __future__ import annotations

import numpy as np

__all__ = ["decode", "encode", "first_valid_value", "starts_with_start_point"]


def first_valid_value(values: np.ndarray, valid: np.ndarray) -> float:
    """The chunk's start: its first non-null value (NaN when there is none)."""
    index = np.flatnonzero(valid)
    return float(values[index[0]]) if index.size else float("nan")


def starts_with_start_point(
    start: float, values: np.ndarray, valid: np.ndarray, size: int | None = None
) -> bool:
    """Whether decoding must prepend ``start`` to the stored values (shared with delta).

    With ``size`` (the chunk's point count) the answer is ``size == len(valid) + 1``. Without it:

    * nothing stored: prepend unless ``start`` is NaN (an empty chunk);
    * the first stored element is non-null: prepend (the reference rule);
    * the store begins with nulls and holds a non-null value: that value is stored raw and is the
      chunk's first non-null value unless a start point was left out, so prepend exactly when it
      differs from ``start`` (this agrees with the reference's "two leading nulls" rule on every
      chunk the reference writes, and also decodes a chunk that itself begins with a null pair);
    * only nulls stored: prepend when there are two or more and ``start`` is not NaN (the
      reference rule). A lone stored null stays a lone-null chunk, so the chunk ``[s, null]``
      needs ``size``.
    """
    m = valid.shape[0]
    if size is not None:
        return size == m + 1
    if m == 0:
        return not np.isnan(start)
    if valid[0]:
        return True
    present = np.flatnonzero(valid)
    if present.size:
        return bool(values[present[0]] != start)
    return m > 1 and not np.isnan(start)


def encode(values: np.ndarray, valid: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Return ``(start, out_values, out_valid)`` for one chunk: its first non-null value, and
    points 1…n−1 (null outputs hold 0.0)."""
    values = np.asarray(values)
    valid = np.asarray(valid, dtype=bool)
    start = first_valid_value(values, valid)
    out_valid = valid[1:].copy()
    out_values = np.where(out_valid, values[1:], np.zeros((), dtype=values.dtype))
    return start, out_values, out_valid


def decode(
    start: float, values: np.ndarray, valid: np.ndarray, *, size: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Invert :func:`encode` (``[start] + values``; a NaN start, a chunk without a non-null
    value, decodes as a null); with ``size``, a chunk whose values are as many as its points
    (a stored leading null, as earlier versions wrote) is returned as stored."""
    values = np.asarray(values)
    valid = np.asarray(valid, dtype=bool)
    if size is not None and size == valid.shape[0]:
        return np.where(valid, values, np.zeros((), dtype=values.dtype)), valid.copy()
    head = not np.isnan(start)
    out_values = np.concatenate((np.array([start if head else 0.0], dtype=values.dtype), values))
    out_valid = np.concatenate(([head], valid))
    return np.where(out_valid, out_values, np.zeros((), dtype=values.dtype)), out_valid
