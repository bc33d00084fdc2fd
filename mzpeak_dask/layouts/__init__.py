"""Signal layouts, keyed by the name ``ConvertOptions.layout`` gives them (format doc sections
2.1 and 2.2): ``point`` stores one row per data point, ``chunked`` one row per chunk of the main
axis. Each is a module with the same signature, encode beside decode, no I/O::

    PREFIX                                   the top-level struct of the data member
    SORTS_ITEMS                              whether items are sorted along the main axis
    struct_type(schema, options)             that struct's Arrow type
    array_index(schema, options)             the array index entries of its columns
    encode(schema, items, options)           prepared items -> one Arrow table
    row_weights(table)                       points per row (row groups are cut by points)
    decode(rows, views, where)               rows -> ({view: (values, valid)}, points per row)
"""

from __future__ import annotations

from types import ModuleType

import pyarrow as pa

from ..format import vocabulary as V
from ..options import ConvertOptions
from . import chunked, point
from .array_index import ArrayView
from .schema import SignalSchema

LAYOUTS: dict[str, ModuleType] = {"point": point, "chunked": chunked}


def layout_of(options: ConvertOptions) -> ModuleType:
    """The layout module ``options`` ask for."""
    return LAYOUTS[options.layout]


def stored_layout(views: list[ArrayView]) -> ModuleType:
    """The layout a data member was written in, told by its array index: chunked when an
    array has chunk columns."""
    chunks = any(V.CHUNK_VALUES in v.columns or V.CHUNK_START in v.columns for v in views)
    return LAYOUTS["chunked" if chunks else "point"]


def table_schema(schema: SignalSchema, options: ConvertOptions) -> pa.Schema:
    """The Arrow schema of a data member: the layout's struct, alone."""
    layout = layout_of(options)
    return pa.schema([pa.field(layout.PREFIX, layout.struct_type(schema, options))])


__all__ = ["LAYOUTS", "layout_of", "stored_layout", "table_schema"]
