"""Column-wise accumulation of struct rows into one Arrow struct array."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..support.arrow_build import from_list


class StructBuilder:
    """Collects rows (dicts keyed by field name) and builds them column by column.

    Column-wise lists convert to Arrow faster than a list of row dicts, and a missing key simply
    becomes a null. The rows are kept as given and each column is read out of them at once when
    the array is built. Columns given to :meth:`finish` as ready Arrow arrays (e.g. the auxiliary
    arrays, built from numpy buffers) bypass the Python lists.
    """

    def __init__(self, type: pa.StructType):
        self.type = type
        self._rows: list[dict[str, Any]] = []

    @property
    def length(self) -> int:
        return len(self._rows)

    def append(self, row: dict[str, Any]) -> None:
        self._rows.append(row)

    def finish(self, prebuilt: dict[str, pa.Array] | None = None) -> pa.StructArray:
        prebuilt = prebuilt or {}
        rows = self._rows
        children = []
        for f in self.type:
            if f.name in prebuilt:
                children.append(prebuilt[f.name])
            else:
                name = f.name
                children.append(from_list([row.get(name) for row in rows], f.type))
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
