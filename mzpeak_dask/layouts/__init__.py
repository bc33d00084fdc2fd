"""Signal layouts: arrays of many items -> one Arrow table, and back.

``point`` stores one row per data point; ``chunked`` one row per chunk of the main axis
(format doc sections 2.1 and 2.2).
"""

from __future__ import annotations

import pyarrow as pa

from ..options import ConvertOptions
from . import point
from .point import PreparedSignal
from .schema import SignalSchema


def encode(schema: SignalSchema, items: list[PreparedSignal], options: ConvertOptions) -> pa.Table:
    if options.layout == "chunked":
        from . import chunked

        return chunked.encode(schema, items, options)
    return point.encode(schema, items)


def prefix(options: ConvertOptions) -> str:
    """The top-level struct name of the data file (``point`` or ``chunk``)."""
    return "chunk" if options.layout == "chunked" else point.PREFIX


def table_schema(schema: SignalSchema, options: ConvertOptions) -> pa.Schema:
    if options.layout == "chunked":
        from . import chunked

        return pa.schema([pa.field(chunked.PREFIX, chunked.struct_type(schema, options))])
    return pa.schema([pa.field(point.PREFIX, point.struct_type(schema))])


def index_entries(schema: SignalSchema, options: ConvertOptions) -> list:
    if options.layout == "chunked":
        from . import chunked

        return chunked.array_index(schema, options)
    return point.array_index(schema)


def row_weights(options: ConvertOptions):  # noqa: ANN201 - returns a callable
    """Points per row (1 in the point layout; the chunk's point count in the chunked one)."""
    if options.layout == "chunked":
        from . import chunked

        return chunked.row_weights
    return None
