"""The point layout: one row per data point, ``point.<context>_index`` first (format doc 2.1).

:func:`encode` turns the prepared signal of many spectra into one Arrow table (no I/O);
:func:`decode` turns the rows of one spectrum back into arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .. import vocabulary as V
from .array_index import ArrayIndexEntry, field_metadata
from .schema import SignalColumn, SignalSchema

PREFIX = "point"


@dataclass(slots=True)
class PreparedSignal:
    """One item's signal, ready for a layout: values per column (already in the column's
    dtype), the validity of the null-marked columns, and the number of points."""

    index: int
    values: dict[str, np.ndarray]
    valid: np.ndarray | None
    length: int
    profile: bool = False
    model: list[float] | None = None  # the mz_delta_model of a null-marked item
    ordered: bool = True  # the non-null main-axis values are ascending


def index_column(context: str) -> str:
    return f"{V.CONTEXT[context]}_index"


def arrow_type(column: SignalColumn) -> pa.DataType:
    return pa.from_numpy_dtype(np.dtype(column.dtype))


def struct_type(schema: SignalSchema) -> pa.StructType:
    fields = [pa.field(index_column(schema.entity), pa.uint64())]
    for c in schema.columns:
        meta = field_metadata(schema, c, V.POINT, with_rank=False)  # known at the end only
        fields.append(pa.field(c.name, arrow_type(c), metadata=meta))
    return pa.struct(fields)


def array_index(schema: SignalSchema) -> list[ArrayIndexEntry]:
    return [
        ArrayIndexEntry.for_column(schema, c, f"{PREFIX}.{c.name}", V.POINT) for c in schema.columns
    ]


def _column_array(column: SignalColumn, items: list[PreparedSignal], total: int) -> pa.Array:
    dtype = np.dtype(column.dtype)
    parts, masks = [], []
    any_null = False
    for item in items:
        values = item.values.get(column.name)
        if values is None:
            parts.append(np.zeros(item.length, dtype=dtype))
            masks.append(np.zeros(item.length, dtype=bool))
            any_null = any_null or item.length > 0
        else:
            parts.append(values)
            if column.null_marked and item.valid is not None:
                masks.append(item.valid)
                any_null = True
            else:
                masks.append(np.ones(item.length, dtype=bool))
    values = np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
    if not any_null:
        return pa.array(values, type=arrow_type(column))
    valid = np.concatenate(masks)
    return pa.array(values, type=arrow_type(column), mask=~valid)


def encode(schema: SignalSchema, items: list[PreparedSignal]) -> pa.Table:
    """The point table for ``items`` (in order; empty items contribute no rows)."""
    lengths = np.array([it.length for it in items], dtype=np.int64)
    total = int(lengths.sum())
    index = np.repeat(np.array([it.index for it in items], dtype=np.uint64), lengths)
    stype = struct_type(schema)
    children = [pa.array(index, type=pa.uint64())]
    children += [_column_array(c, items, total) for c in schema.columns]
    struct = pa.StructArray.from_arrays(children, fields=list(stype))
    return pa.table({PREFIX: struct})


def decode(
    struct: pa.StructArray | pa.ChunkedArray, schema_names: list[str]
) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """Rows of one item -> ``{column: (values, valid or None)}`` for the named columns.

    ``valid`` is None when the column has no nulls in these rows; a column that is entirely
    null for the item is reported with an all-False mask (the array is absent).
    """
    if isinstance(struct, pa.ChunkedArray):
        struct = struct.combine_chunks()
    out: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
    for name in schema_names:
        out[name] = _to_numpy(struct.field(name))  # field() honours the struct's offset
    return out


def _to_numpy(array: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    if array.null_count == 0:
        return array.to_numpy(zero_copy_only=False), None
    valid = np.asarray(array.is_valid())
    filled = array.fill_null(pa.scalar(0, type=array.type))
    return filled.to_numpy(zero_copy_only=False), valid
