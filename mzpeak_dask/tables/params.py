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

from ..model.records import Param
from ..support.arrow_build import from_list, from_numpy

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
    """The ``parameters`` lists of many rows, gathered as they come (each row's params, in
    order) and built into one Arrow list array at once, column by column (each param's value in
    the slot :func:`param_row` gives it, its accession, name and unit): the same array as
    converting :func:`param_rows` row by row."""

    __slots__ = ("counts", "params")

    def __init__(self) -> None:
        self.params: list[Param] = []
        self.counts: list[int] = []

    def add(self, params: list[Param]) -> None:
        """One row's list."""
        self.params.extend(params)
        self.counts.append(len(params))

    def finish(self) -> pa.LargeListArray:
        params = self.params
        integer, floating, string, boolean = _value_slots([p.value for p in params])
        value = pa.StructArray.from_arrays(
            [
                from_list(integer, pa.int64()),
                from_list(floating, pa.float64()),
                from_list(string, pa.large_string()),
                from_list(boolean, pa.bool_()),
            ],
            fields=list(VALUE_TYPE),
        )
        items = pa.StructArray.from_arrays(
            [
                value,
                from_list([p.accession for p in params], pa.string()),
                from_list([p.name for p in params], pa.large_string()),
                from_list([p.unit for p in params], pa.string()),
            ],
            fields=list(PARAM_TYPE),
        )
        offsets = np.zeros(len(self.counts) + 1, dtype=np.int64)
        np.cumsum(self.counts, out=offsets[1:])
        return pa.LargeListArray.from_arrays(from_numpy(offsets), items, type=PARAM_LIST_TYPE)


def _value_slots(values: list[Any]) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """The integer, float, string and boolean slots of many values, as :func:`_value_row` fills
    them one by one: a plain float (most values) goes straight to its slot, None to none, every
    other value through :func:`_value_row`."""
    floating = [v if type(v) is float else None for v in values]
    integer: list[Any] = [None] * len(values)
    string: list[Any] = [None] * len(values)
    boolean: list[Any] = [None] * len(values)
    for i, v in enumerate(values):
        if v is not None and type(v) is not float:
            slots = _value_row(v)
            integer[i] = slots["integer"]
            floating[i] = slots["float"]
            string[i] = slots["string"]
            boolean[i] = slots["boolean"]
    return integer, floating, string, boolean


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
