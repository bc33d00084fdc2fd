"""The point layout: one row per data point, ``point.<context>_index`` first (format doc 2.1).

:func:`encode` turns the prepared signal of many items into one Arrow table; :func:`decode` turns
rows back into arrays (no I/O either way). The signature is every layout's (see
:mod:`mzpeak_dask.layouts`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..format import vocabulary as V
from ..options import ConvertOptions
from ..support.arrow_build import from_numpy
from .array_index import ArrayIndexEntry, ArrayView, field_metadata
from .arrow import Pair, to_numpy
from .schema import PreparedSignal, SignalColumn, SignalSchema

PREFIX = "point"
SORTS_ITEMS = False  # points keep their source order


def arrow_type(column: SignalColumn) -> pa.DataType:
    return pa.from_numpy_dtype(np.dtype(column.dtype))


def struct_type(schema: SignalSchema, options: ConvertOptions) -> pa.StructType:
    fields = [pa.field(schema.index_column, pa.uint64())]
    for c in schema.columns:
        meta = field_metadata(schema, c, V.POINT, with_rank=False)  # known at the end only
        fields.append(pa.field(c.name, arrow_type(c), metadata=meta))
    return pa.struct(fields)


def array_index(schema: SignalSchema, options: ConvertOptions) -> list[ArrayIndexEntry]:
    return [
        ArrayIndexEntry.for_column(schema, c, f"{PREFIX}.{c.name}", V.POINT) for c in schema.columns
    ]


def _column_array(column: SignalColumn, items: list[PreparedSignal], total: int) -> pa.Array:
    """The items' values of ``column``, end to end; null where an item lacks the column or
    marked its points null. The validity mask is built only when some point is null, in one
    array with the null items' stretches written into it."""
    dtype = np.dtype(column.dtype)
    parts = []
    nulls: list[tuple[int, int, np.ndarray | None]] = []  # (start, points, validity or None)
    start = 0
    name, marked = column.name, column.null_marked
    for item in items:
        values = item.values.get(name)
        if values is None:
            parts.append(np.zeros(item.length, dtype=dtype))
            if item.length:
                nulls.append((start, item.length, None))
        else:
            parts.append(values)
            if marked and item.valid is not None:
                nulls.append((start, item.length, item.valid))
        start += item.length
    values = np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
    if not nulls:
        return from_numpy(values, arrow_type(column))
    valid = np.ones(total, dtype=bool)
    for at, length, validity in nulls:
        valid[at : at + length] = False if validity is None else validity
    return from_numpy(values, arrow_type(column), valid)


def encode(schema: SignalSchema, items: list[PreparedSignal], options: ConvertOptions) -> pa.Table:
    """The point table for ``items`` (in order; empty items contribute no rows)."""
    lengths = np.array([it.length for it in items], dtype=np.int64)
    total = int(lengths.sum())
    index = np.repeat(np.array([it.index for it in items], dtype=np.uint64), lengths)
    stype = struct_type(schema, options)
    children = [from_numpy(index, pa.uint64())]
    children += [_column_array(c, items, total) for c in schema.columns]
    struct = pa.StructArray.from_arrays(children, fields=list(stype))
    return pa.table({PREFIX: struct})


def row_weights(table: pa.Table) -> np.ndarray:
    """Points per row: one."""
    return np.ones(table.num_rows, dtype=np.int64)


def decode(
    rows: pa.StructArray, views: list[ArrayView], where: str = ""
) -> tuple[dict[int, Pair], np.ndarray]:
    """Rows (of any items) -> per array view ``k``, ``(values, valid)`` over the rows, and the
    points of each row (one)."""
    out = {}
    for k, view in enumerate(views):
        entry = view.columns.get(V.POINT)
        if entry is not None:
            out[k] = to_numpy(rows.field(entry.column))  # field() honours the struct's offset
    return out, np.ones(len(rows), dtype=np.int64)
