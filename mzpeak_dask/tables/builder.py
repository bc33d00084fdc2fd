"""Column-wise accumulation of struct rows into one Arrow struct array."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..arrow_build import from_list


class StructBuilder:
    """Collects rows (dicts keyed by field name) column by column.

    Column-wise lists convert to Arrow faster than a list of row dicts, and a missing key simply
    becomes a null. Columns given to :meth:`finish` as ready Arrow arrays (e.g. the auxiliary
    arrays, built from numpy buffers) bypass the Python lists.
    """

    def __init__(self, type: pa.StructType):
        self.type = type
        self._columns: list[tuple[str, list[Any]]] = [(f.name, []) for f in type]
        self._data: dict[str, list[Any]] = dict(self._columns)
        self.length = 0

    def append(self, row: dict[str, Any]) -> None:
        get = row.get
        for name, values in self._columns:
            values.append(get(name))
        self.length += 1

    def finish(self, prebuilt: dict[str, pa.Array] | None = None) -> pa.StructArray:
        prebuilt = prebuilt or {}
        children = []
        for f in self.type:
            if f.name in prebuilt:
                children.append(prebuilt[f.name])
            else:
                children.append(from_list(self._data[f.name], f.type))
        return pa.StructArray.from_arrays(children, fields=list(self.type))


def padding(type: pa.DataType, length: int) -> pa.Array:
    """``length`` padding values of ``type``: null, except that a struct is a valid struct of
    padding values, nested structs included, as the reference writer pads."""
    if pa.types.is_struct(type):
        children = [padding(f.type, length) for f in type]
        return pa.StructArray.from_arrays(children, fields=list(type))
    return pa.nulls(length, type=type)


def pad_struct(array: pa.StructArray, length: int) -> pa.StructArray:
    """Extend a struct array to ``length`` rows with valid structs whose fields are all null
    (nested structs valid too) — the padding of the packed metadata tables (format doc
    section 2.4)."""
    missing = length - len(array)
    if missing <= 0:
        return array
    children = [
        pa.concat_arrays([child, padding(child.type, missing)]) for child in array.flatten()
    ]
    return pa.StructArray.from_arrays(children, fields=list(array.type))
