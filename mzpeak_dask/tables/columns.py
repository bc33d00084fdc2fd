"""CV-named metadata columns: naming, promotion of params to columns, and the way back.

A param that occurs at most once per row is promoted to its own column (format doc section 2.4);
the column is named by inflecting the CV term (``MS_1000511_ms_level``,
``MS_1000504_base_peak_mz_unit_MS_1000040``). The promoted set is fixed per table (so every
worker produces the same schema); a param whose unit differs from its column's unit, or whose
value does not fit the column type, stays in ``parameters`` — nothing is dropped.

Float columns are float64 even where the reference writer uses float32: the specification
recommends f64 for floating-point values and the conversion must be lossless.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import pyarrow as pa

from ..model.records import Param

_NON_WORD = re.compile(r"[^A-Za-z0-9_-]")


@lru_cache(maxsize=4096)
def inflect(accession: str, name: str, unit: str | None = None) -> str:
    """Column name for a CV term: ``{CV}_{number}_{name}[_unit_{UNITCV}_{number}]``."""
    prefix, number = accession.split(":", 1)
    column = f"{prefix}_{number}_" + _NON_WORD.sub("_", name.replace("m/z", "mz"))
    if unit:
        column += "_unit_" + unit.replace(":", "_")
    return column


_INFLECTED = re.compile(r"^([A-Z]+)_(\d+)_(.*?)(?:_unit_([A-Z]+)_(\d+))?$")


@lru_cache(maxsize=4096)
def parse_inflected(column: str) -> tuple[str, str | None] | None:
    """``(accession, unit)`` encoded in an inflected column name, or None for structural names."""
    m = _INFLECTED.match(column)
    if not m:
        return None
    accession = f"{m.group(1)}:{m.group(2)}"
    unit = f"{m.group(4)}:{m.group(5)}" if m.group(4) else None
    return accession, unit


def _to_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def _to_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _to_str(value: Any) -> str | None:
    return None if value is None else str(value)


_CONVERTERS: dict[str, Callable[[Any], Any]] = {"int": _to_int, "float": _to_float, "str": _to_str}
_RANGES = {
    pa.uint8(): (0, 2**8 - 1),
    pa.uint32(): (0, 2**32 - 1),
    pa.uint64(): (0, 2**64 - 1),
    pa.int8(): (-(2**7), 2**7 - 1),
    pa.int32(): (-(2**31), 2**31 - 1),
    pa.int64(): (-(2**63), 2**63 - 1),
}


@dataclass(frozen=True, slots=True)
class ValueColumn:
    """A column holding the value of one CV param (promoted from ``parameters``)."""

    accession: str
    term: str  # the CV term name, used to rebuild the Param when reading
    unit: str | None  # the unit in the column name; a param with another unit is not promoted
    type: pa.DataType
    kind: str  # "int" | "float" | "str"
    name: str = ""  # explicit column name when it differs from the inflected one
    # worked out once (a column accepts values for every row of every partition)
    _column: str = field(init=False, repr=False, compare=False)
    _convert: Callable[[Any], Any] = field(init=False, repr=False, compare=False)
    _bounds: tuple[int, int] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "_column", self.name or inflect(self.accession, self.term, self.unit)
        )
        object.__setattr__(self, "_convert", _CONVERTERS[self.kind])
        object.__setattr__(self, "_bounds", _RANGES.get(self.type))

    @property
    def column(self) -> str:
        return self._column

    def accepts(self, param: Param) -> Any:
        """The converted value when ``param`` fits this column, else ``_REJECT``."""
        if param.unit is not None and param.unit != self.unit:
            return _REJECT
        value = param.value
        kind = type(value)
        if kind is float and self.kind == "float":
            return value  # what _to_float gives a float; float columns have no bounds
        if kind is not int or self.kind != "int":
            value = self._convert(value)
            if value is None:
                return _REJECT
        bounds = self._bounds
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            return _REJECT
        return value

    def to_param(self, value: Any) -> Param:
        return Param(self.term, self.accession, value, self.unit)


@dataclass(frozen=True, slots=True)
class TermColumn:
    """A column holding *which* term of a family is present, e.g. the spectrum type (stored as
    its CURIE) or the scan polarity (stored as a code, 1 / -1)."""

    column: str
    type: pa.DataType
    names: dict[str, str]  # the family: accession -> term name
    codes: dict[str, Any] | None = None  # accession -> stored value; None stores the CURIE

    def encode(self, accession: str) -> Any:
        return accession if self.codes is None else self.codes[accession]

    def to_param(self, stored: Any) -> Param | None:
        accession = stored
        if self.codes is not None:
            accession = next((a for a, c in self.codes.items() if c == stored), None)
        if accession is None:
            return None
        return Param(self.names.get(accession, accession), accession, None, None)


class _Reject:
    __slots__ = ()


_REJECT = _Reject()


def promote(
    params: list[Param],
    value_columns: dict[str, ValueColumn],
    term_columns: tuple[TermColumn, ...] = (),
) -> tuple[dict[str, Any], list[Param]]:
    """Split ``params`` into promoted column values and the remaining ``parameters`` list.

    A param is promoted when its accession has a column, the value fits, and no earlier param
    already filled that column (repeated params stay in ``parameters``).
    """
    values: dict[str, Any] = {}
    rest: list[Param] = []
    for p in params:
        acc = p.accession
        if not acc:  # a userParam
            rest.append(p)
            continue
        col = value_columns.get(acc)
        if col is not None and col._column not in values:
            v = col.accepts(p)
            if v is not _REJECT:
                values[col._column] = v
                continue
        if term_columns and (p.value is None or p.value == ""):
            term = _term_column_for(acc, term_columns)
            if term is not None and term.column not in values:
                values[term.column] = term.encode(acc)
                continue
        rest.append(p)
    return values, rest


def _term_column_for(accession: str, term_columns: tuple[TermColumn, ...]) -> TermColumn | None:
    for t in term_columns:
        if accession in t.names:
            return t
    return None


def fields(columns: list[ValueColumn]) -> list[pa.Field]:
    return [pa.field(c.column, c.type) for c in columns]
