"""Arrow columns <-> numpy ``(values, valid)`` pairs, the form every layout encodes from and
decodes to: plain columns with nulls, and list columns (one list per chunk row)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..support.arrow_build import from_numpy, mask

Pair = tuple[np.ndarray, np.ndarray | None]  # values, and validity (None: no nulls)


def to_numpy(array: pa.Array) -> Pair:
    """Values (nulls as 0) and validity, None when there is no null."""
    if array.null_count == 0:
        return array.to_numpy(zero_copy_only=False), None
    valid = np.asarray(array.is_valid())
    return array.fill_null(pa.scalar(0, type=array.type)).to_numpy(zero_copy_only=False), valid


def flat(column: pa.Array) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """A list column's values (and validity) for its rows, with offsets from 0."""
    offsets = column.offsets.to_numpy()
    base = int(offsets[0])
    values, valid = to_numpy(column.values.slice(base, int(offsets[-1]) - base))
    return values, valid, (offsets - base).astype(np.int64)


def lists(column: pa.Array) -> list[Pair | None]:
    """Per row: None (a null list) or ``(values, valid-or-None)``."""
    offsets = column.offsets.to_numpy()
    values, valid = to_numpy(column.values)
    row_valid = np.asarray(column.is_valid())
    out: list[Pair | None] = []
    for r in range(len(column)):
        if not row_valid[r]:
            out.append(None)
            continue
        a, b = offsets[r], offsets[r + 1]
        out.append((values[a:b], None if valid is None else valid[a:b]))
    return out


def concat(parts: list[Pair]) -> Pair:
    """Pairs joined end to end (validity None when no part has nulls)."""
    values = np.concatenate([p[0] for p in parts])
    if all(p[1] is None for p in parts):
        return values, None
    valid = np.concatenate([np.ones(len(p[0]), bool) if p[1] is None else p[1] for p in parts])
    return values, valid


def list_array(parts: list[Pair | None], list_type: pa.DataType) -> pa.Array:
    """A large_list column from per-row ``(values, valid)`` pairs (None = a null row)."""
    value_type = list_type.value_type
    lengths = np.array([0 if p is None else len(p[0]) for p in parts], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    dtype = value_type.to_pandas_dtype()
    present = [p for p in parts if p is not None]
    values = np.concatenate([p[0] for p in present]) if present else np.zeros(0, dtype)
    masks = [np.ones(len(p[0]), bool) if p[1] is None else p[1] for p in present]
    valid = np.concatenate(masks) if masks else np.zeros(0, bool)
    items = from_numpy(values.astype(dtype, copy=False), value_type, valid)
    row_mask = mask(np.array([p is None for p in parts], dtype=bool))
    return pa.LargeListArray.from_arrays(
        from_numpy(offsets),
        items,
        type=list_type,
        mask=row_mask if any(p is None for p in parts) else None,
    )
