"""The "basic" chunk encoding, ``MS:1000576`` (no compression), format document §5.4.

A chunk's main-axis values are stored as they are, except that the start point, which the layout
keeps in ``<axis>_chunk_start``, is left out of ``<axis>_chunk_values``. Nulls are carried as a
value array plus a boolean ``valid`` mask (True = non-null).

Null rule (ours; the reference writer only ever uses this encoding for centroids, which have no
nulls, and there it drops element 0 unconditionally): we mirror the delta encoding. When the
chunk's first element is null it is *kept* as a leading null, and ``start`` is the first non-null
value. Decoding prepends ``start`` when the first stored element is non-null, or when the stored
values begin with nulls followed by a value other than ``start`` (a start point directly followed by
a null pair); see :func:`starts_with_start_point`. Without the chunk's point count a few shapes stay
ambiguous (``[s, null]``; equal values on both sides of a null pair); none comes out of
:func:`mzpeak_dask.transforms.chunking.chunk_boundaries` with ``min_points >= 2``. Pass ``size``
(the length of the chunk's secondary arrays, which the layout always has) to make decoding exact.
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
    """Return ``(start, out_values, out_valid)`` for one chunk; null outputs hold 0.0."""
    values = np.asarray(values)
    valid = np.asarray(valid, dtype=bool)
    start = first_valid_value(values, valid)
    skip = 1 if valid.shape[0] and valid[0] else 0
    out_valid = valid[skip:].copy()
    out_values = np.where(out_valid, values[skip:], np.zeros((), dtype=values.dtype))
    return start, out_values, out_valid


def decode(
    start: float, values: np.ndarray, valid: np.ndarray, *, size: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Invert :func:`encode`; ``size`` (the chunk's point count) settles the ambiguous shapes."""
    values = np.asarray(values)
    valid = np.asarray(valid, dtype=bool)
    if not starts_with_start_point(start, values, valid, size):
        return np.where(valid, values, np.zeros((), dtype=values.dtype)), valid.copy()
    out_values = np.concatenate((np.array([start], dtype=values.dtype), values))
    out_valid = np.concatenate(([True], valid))
    return np.where(out_valid, out_values, np.zeros((), dtype=values.dtype)), out_valid
