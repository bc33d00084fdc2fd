"""The ``parameters`` list type shared by every mzPeak metadata table, and its conversions.

Element type (format doc section 2.4, a spec MUST)::

    struct{value: struct{integer: int64, float: float64, string: large_string, boolean: bool},
           accession: string, name: large_string, unit: string}

At most one ``value`` slot is set; ``accession`` null means a userParam.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..arrow_build import from_list, from_numpy
from ..records import Param

VALUE_TYPE = pa.struct(
    [
        pa.field("integer", pa.int64()),
        pa.field("float", pa.float64()),
        pa.field("string", pa.large_string()),
        pa.field("boolean", pa.bool_()),
    ]
)
PARAM_TYPE = pa.struct(
    [
        pa.field("value", VALUE_TYPE),
        pa.field("accession", pa.string()),
        pa.field("name", pa.large_string()),
        pa.field("unit", pa.string()),
    ]
)
PARAM_LIST_TYPE = pa.large_list(pa.field("item", PARAM_TYPE))

_EMPTY_VALUE = {"integer": None, "float": None, "string": None, "boolean": None}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _value_row(value: Any) -> dict[str, Any]:
    if value is None:
        return _EMPTY_VALUE
    if isinstance(value, bool):
        return {"integer": None, "float": None, "string": None, "boolean": value}
    if isinstance(value, int):
        if _INT64_MIN <= value <= _INT64_MAX:
            return {"integer": int(value), "float": None, "string": None, "boolean": None}
        return {"integer": None, "float": None, "string": str(value), "boolean": None}
    if isinstance(value, float):
        return {"integer": None, "float": float(value), "string": None, "boolean": None}
    return {"integer": None, "float": None, "string": str(value), "boolean": None}


def param_row(param: Param) -> dict[str, Any]:
    """A Param as a Python dict shaped like :data:`PARAM_TYPE`."""
    return {
        "value": _value_row(param.value),
        "accession": param.accession,
        "name": param.name,
        "unit": param.unit,
    }


def param_rows(params: list[Param]) -> list[dict[str, Any]]:
    return [param_row(p) for p in params]


class ParamLists:
    """The ``parameters`` lists of many rows, gathered column by column (each param's value in
    the slot :func:`param_row` gives it, its accession, name and unit) and built into one Arrow
    list array at once: the same array as converting :func:`param_rows` row by row."""

    __slots__ = ("accession", "boolean", "counts", "float", "integer", "name", "string", "unit")

    def __init__(self) -> None:
        self.integer: list[int | None] = []
        self.float: list[float | None] = []
        self.string: list[str | None] = []
        self.boolean: list[bool | None] = []
        self.accession: list[str | None] = []
        self.name: list[str | None] = []
        self.unit: list[str | None] = []
        self.counts: list[int] = []

    def add(self, params: list[Param]) -> None:
        """One row's list."""
        for p in params:
            slots = _value_row(p.value)
            self.integer.append(slots["integer"])
            self.float.append(slots["float"])
            self.string.append(slots["string"])
            self.boolean.append(slots["boolean"])
            self.accession.append(p.accession)
            self.name.append(p.name)
            self.unit.append(p.unit)
        self.counts.append(len(params))

    def finish(self) -> pa.LargeListArray:
        value = pa.StructArray.from_arrays(
            [
                from_list(self.integer, pa.int64()),
                from_list(self.float, pa.float64()),
                from_list(self.string, pa.large_string()),
                from_list(self.boolean, pa.bool_()),
            ],
            fields=list(VALUE_TYPE),
        )
        items = pa.StructArray.from_arrays(
            [
                value,
                from_list(self.accession, pa.string()),
                from_list(self.name, pa.large_string()),
                from_list(self.unit, pa.string()),
            ],
            fields=list(PARAM_TYPE),
        )
        offsets = np.zeros(len(self.counts) + 1, dtype=np.int64)
        np.cumsum(self.counts, out=offsets[1:])
        return pa.LargeListArray.from_arrays(from_numpy(offsets), items, type=PARAM_LIST_TYPE)


def value_of(value: dict[str, Any] | Any) -> Any:
    """The one set slot of a value struct (tolerates older writers that wrote a bare value)."""
    if not isinstance(value, dict):
        return value
    for slot in ("integer", "float", "string", "boolean"):
        v = value.get(slot)
        if v is not None:
            return v
    return None


def param_from_row(row: dict[str, Any]) -> Param:
    """The inverse of :func:`param_row`; tolerant of missing keys (newest reference code omits
    ``value`` when absent)."""
    return Param(
        name=row.get("name"),
        accession=row.get("accession"),
        value=value_of(row.get("value")),
        unit=row.get("unit"),
    )


def params_from_rows(rows: list[dict[str, Any]] | None) -> list[Param]:
    return [param_from_row(r) for r in rows or ()]
