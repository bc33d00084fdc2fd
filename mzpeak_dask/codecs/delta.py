"""The null-aware delta chunk encoding, ``MS:1003089``, format document §5.4.

Encoding follows the reference ``null_delta_encode``: the chunk's first element is the reference
point and is not emitted, unless it is null, in which case a null is emitted. Every later element
is emitted as null when null, as the difference from its predecessor when that is non-null, and as
its raw value when the predecessor is null. Decoding walks back: a run of non-null stored values
that follows a null (or opens the store) starts from an absolute value, and the rest of the run is
a running sum. ``start`` (the chunk's first non-null value) is prepended by the rule shared with the
basic encoding (:func:`mzpeak_dask.codecs.basic.starts_with_start_point`).

Exactness: decoding re-adds each difference to the previous decoded value, ``x[i-1] + (x[i] -
x[i-1])``, in the same left-to-right order the reference uses; ``np.cumsum`` accumulates
sequentially (it does not use pairwise summation, unlike ``np.sum``), so each decoded run equals the
reference's. The result is bit-exact when every subtraction is exact, which Sterbenz's lemma
guarantees for neighbours within a factor of two of each other (``y/2 <= x <= 2y``): always the case
for a sorted m/z axis away from zero. Elsewhere (values straddling zero, huge jumps, signed zeros)
a difference may round; :func:`round_trips` checks a chunk cheaply so the writer can fall back to
the basic encoding for it.
"""

from __future__ import annotations

import numpy as np

from .basic import first_valid_value, starts_with_start_point

__all__ = ["decode", "decode_chunks", "encode", "encode_chunks", "round_trips"]


def _clean(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """float64 copy with 0.0 at null positions, so garbage there cannot raise or overflow."""
    return np.where(valid, np.asarray(values, dtype=np.float64), 0.0)


def encode(values: np.ndarray, valid: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Return ``(start, out_values, out_valid)`` for one chunk; null outputs hold 0.0."""
    valid = np.asarray(valid, dtype=bool)
    x = _clean(values, valid)
    start = first_valid_value(x, valid)
    if x.shape[0] == 0:
        return start, x, valid.copy()
    # Nulls hold 0.0 here, so the difference after a null is the raw value itself, exactly
    # (x - 0.0 == x, signed zeros included): the reference's "previous treated as 0.0".
    with np.errstate(over="ignore", invalid="ignore"):  # huge jumps: see round_trips
        body = np.where(valid[1:], x[1:] - x[:-1], 0.0)
    if valid[0]:
        return start, body, valid[1:].copy()
    return start, np.concatenate(([0.0], body)), valid.copy()


def decode(
    start: float, values: np.ndarray, valid: np.ndarray, *, size: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Invert :func:`encode`; ``size`` (the chunk's point count) settles the ambiguous shapes."""
    valid = np.asarray(valid, dtype=bool)
    x = _clean(values, valid)
    if starts_with_start_point(start, x, valid, size):
        x = np.concatenate(([float(start)], x))
        valid = np.concatenate(([True], valid))
    return _running_sums(x, valid), valid.copy()


def _running_sums(x: np.ndarray, valid: np.ndarray, breaks: np.ndarray | None = None) -> np.ndarray:
    """Sequential cumulative sum inside every run of non-null values (nulls stay 0.0); a run
    also restarts wherever ``breaks`` is True (e.g. at every chunk's first point).

    Runs are grouped by length class (powers of two) and laid out as rows of a zero-padded 2-d
    array, so one ``np.cumsum(axis=1)`` per class sums every run exactly left to right, with at
    most twice the memory of the data.
    """
    out = np.zeros_like(x)
    previous = np.concatenate(([False], valid[:-1]))
    first = valid & ~previous if breaks is None else valid & (~previous | breaks)
    run_starts = np.flatnonzero(first)
    if run_starts.size == 0:
        return out
    run_of = np.cumsum(first) - 1
    run_lengths = np.bincount(run_of[valid], minlength=run_starts.size)
    length_class = np.ceil(np.log2(run_lengths)).astype(np.int64)
    for cls in np.unique(length_class):
        chosen = length_class == cls
        starts, lengths = run_starts[chosen], run_lengths[chosen]
        columns = np.arange(int(lengths.max()))
        inside = columns[None, :] < lengths[:, None]
        index = np.where(inside, starts[:, None] + columns[None, :], 0)
        with np.errstate(over="ignore", invalid="ignore"):
            block = np.cumsum(np.where(inside, x[index], 0.0), axis=1)
        out[index[inside]] = block[inside]
    return out


def decode_chunks(
    starts: np.ndarray,
    sizes: np.ndarray,
    is_delta: np.ndarray,
    values: np.ndarray,
    valid: np.ndarray,
    value_offsets: np.ndarray,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Decode many delta or basic chunks at once (vectorised, bit for bit :func:`decode`).

    ``values``/``valid`` hold every chunk's stored values back to back (``value_offsets``,
    n+1), ``sizes`` each chunk's point count. Returns the concatenated points and validity, or
    None when a chunk's stored count does not fit its size (decode it chunk by chunk then).
    """
    stored = np.diff(value_offsets)
    prepend = sizes == stored + 1
    if not np.all(prepend | (sizes == stored)):
        return None
    out_offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    total = int(out_offsets[-1])
    out = np.zeros(total, dtype=np.float64)
    ok = np.zeros(total, dtype=bool)
    chunk_of = np.repeat(np.arange(len(sizes)), stored)
    destination = (out_offsets[:-1] + prepend)[chunk_of] + (
        np.arange(len(values)) - value_offsets[:-1][chunk_of]
    )
    out[destination] = np.where(valid, values, 0.0)
    ok[destination] = valid
    heads = out_offsets[:-1][prepend]
    head_starts = starts[prepend]
    out[heads] = np.where(np.isnan(head_starts), 0.0, head_starts)
    ok[heads] = ~np.isnan(head_starts)  # a chunk without a non-null value: its head is null
    delta_points = np.repeat(is_delta, sizes)
    if delta_points.any():
        breaks = np.zeros(total, dtype=bool)
        breaks[out_offsets[:-1][sizes > 0]] = True
        summed = _running_sums(out, ok, breaks)
        out = np.where(delta_points, summed, out)
    return out, ok


def round_trips(values: np.ndarray, valid: np.ndarray) -> bool:
    """True when ``decode(*encode(values, valid))`` gives every non-null value back bit for bit.

    By induction along each run of non-null values it suffices that ``a + (b - a)`` reproduces
    ``b`` exactly, bits included (so ``-0.0`` after ``0.0`` fails), for every non-null neighbour
    pair ``a, b``. Non-finite non-null values are reported as not round-tripping.
    """
    valid = np.asarray(valid, dtype=bool)
    x = _clean(values, valid)
    if not np.all(np.isfinite(x)):
        return False
    pairs = valid[1:] & valid[:-1]
    a, b = x[:-1][pairs], x[1:][pairs]
    with np.errstate(over="ignore", invalid="ignore"):
        rebuilt = a + (b - a)
    return bool(np.array_equal(rebuilt.view(np.int64), b.view(np.int64)))


def encode_chunks(
    values: np.ndarray, valid: np.ndarray, offsets: np.ndarray, try_delta: np.ndarray
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Many chunks ``values[offsets[k] : offsets[k + 1]]`` encoded at once, bit for bit as one
    at a time: :func:`encode` where ``try_delta[k]`` and :func:`round_trips` holds, else the
    basic encoding (:func:`mzpeak_dask.codecs.basic.encode`, in float64). Returns whether each
    chunk is delta encoded, and each chunk's stored ``(values, valid)`` (views)."""
    valid = np.asarray(valid, dtype=bool)
    x = _clean(values, valid)
    offsets = np.asarray(offsets, dtype=np.int64)
    sizes = np.diff(offsets)
    chunk = np.repeat(np.arange(sizes.shape[0]), sizes)
    with np.errstate(over="ignore", invalid="ignore"):
        step = x[1:] - x[:-1]
        rebuilt = x[:-1] + step
    pairs = valid[1:] & valid[:-1] & (chunk[1:] == chunk[:-1])
    broken = pairs & (rebuilt.view(np.int64) != x[1:].view(np.int64))
    bad = np.bincount(chunk[1:][broken], minlength=sizes.shape[0])
    bad += np.bincount(chunk[~np.isfinite(x)], minlength=sizes.shape[0])
    is_delta = np.asarray(try_delta, dtype=bool) & (bad == 0)
    body = np.zeros_like(x)
    body[1:] = np.where(valid[1:], step, 0.0)
    heads = offsets[:-1][sizes > 0]
    body[heads] = 0.0  # a null first element is stored as a null; a valid one is left out
    skip = np.zeros(sizes.shape[0], dtype=np.int64)
    skip[sizes > 0] = valid[heads]
    skip[(sizes > 0) & ~is_delta] = 1  # basic: points 1…n−1, whatever the first holds
    stored = []
    for delta_encoded, a, b in zip(
        is_delta.tolist(), (offsets[:-1] + skip).tolist(), offsets[1:].tolist(), strict=True
    ):
        stored.append(((body if delta_encoded else x)[a:b], valid[a:b]))
    return is_delta, stored
