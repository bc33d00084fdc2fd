"""The ``parameters`` list type shared by every mzPeak metadata table, and its conversions.

Element type (format doc section 2.4, a spec MUST)::

    struct{value: struct{integer: int64, float: float64, string: large_string, boolean: bool},
           accession: string, name: large_string, unit: string}

At most one ``value`` slot is set; ``accession`` null means a userParam.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

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
