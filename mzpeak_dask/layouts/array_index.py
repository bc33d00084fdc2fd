"""The array index: the JSON in the data file footer that says what every column holds
(format doc section 3). Readers find columns through it, never by name."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from ..format import vocabulary as V
from .schema import SignalColumn, SignalSchema


@dataclass(frozen=True, slots=True)
class ArrayIndexEntry:
    context: str
    path: str
    data_type: str
    array_type: str
    array_name: str
    unit: str | None
    buffer_format: str
    transform: str | None = None
    data_processing_id: str | None = None
    buffer_priority: str | None = V.PRIMARY
    sorting_rank: int | None = None

    @classmethod
    def for_column(
        cls,
        schema: SignalSchema,
        column: SignalColumn,
        path: str,
        buffer_format: str,
        transform: str | None = None,
    ) -> ArrayIndexEntry:
        if transform is None and column.null_marked:
            is_main = column.sorting_rank == 0
            transform = V.NULL_MARKED_MAIN_AXIS if is_main else V.NULL_MARKED_INTENSITY
        return cls(
            context=V.CONTEXT[schema.entity],
            path=path,
            data_type=column.data_type,
            array_type=column.array_type,
            array_name=column.array_name,
            unit=column.unit,
            buffer_format=buffer_format,
            transform=transform,
            buffer_priority=V.PRIMARY if column.primary else V.SECONDARY,
            sorting_rank=column.sorting_rank,
        )

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ArrayIndexEntry:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})

    @property
    def column(self) -> str:
        """The child name under the layout struct (the path without its prefix)."""
        return self.path.split(".", 1)[1] if "." in self.path else self.path


def declared_sorting(entries: list[ArrayIndexEntry], ordered: bool) -> list[ArrayIndexEntry]:
    """The entries as the data file declares them: the main axis keeps sorting rank 0 only
    when every item's points are in main-axis order (``ordered``); otherwise no array claims
    an order (the reference writer's fix for spectra stored in source order)."""
    if ordered:
        return entries
    return [replace(e, sorting_rank=None) if e.sorting_rank == 0 else e for e in entries]


def dumps(prefix: str, entries: list[ArrayIndexEntry]) -> str:
    return json.dumps({"prefix": prefix, "entries": [asdict(e) for e in entries]}, indent=2)


def loads(text: str | bytes) -> tuple[str, list[ArrayIndexEntry]]:
    data = json.loads(text)
    return data.get("prefix", "point"), [ArrayIndexEntry.from_json(e) for e in data["entries"]]


def field_metadata(
    schema: SignalSchema,
    column: SignalColumn,
    buffer_format: str,
    transform: str | None = None,
    *,
    with_rank: bool = True,
) -> dict[str, str]:
    """The same descriptors as Arrow field metadata (redundant, as the reference writes them).

    ``with_rank=False`` leaves the sorting rank out: the schema is fixed before any point is
    seen, and in the point layout whether the main axis is sorted is known only at the end
    (it is then declared in the array index, see :func:`declared_sorting`)."""
    entry = ArrayIndexEntry.for_column(schema, column, "", buffer_format, transform)
    meta = {
        "context": entry.context,
        "array_accession": entry.array_type,
        "array_name": entry.array_name,
        "buffer_format": entry.buffer_format,
        "buffer_priority": entry.buffer_priority or "",
        "data_type_accession": entry.data_type,
        "unit": entry.unit or "",
    }
    if entry.sorting_rank is not None and with_rank:
        meta["sorting_rank"] = str(entry.sorting_rank)
    if entry.transform:
        meta["transform"] = entry.transform
    return meta


@dataclass
class ArrayView:
    """One logical signal array of a data member and the columns that hold it (by buffer
    format: a point column, or a chunk's start, end, values, encoding, secondary or transform
    column), as a reader finds them through the array index."""

    array_type: str
    array_name: str
    unit: str | None
    data_type: str
    sorting_rank: int | None = None
    null_marked: bool = False
    columns: dict[str, ArrayIndexEntry] = field(default_factory=dict)  # buffer format -> entry

    @property
    def dtype(self) -> np.dtype:
        return V.DTYPE_OF.get(self.data_type, np.dtype("<f8"))


def group_entries(entries: list[ArrayIndexEntry]) -> list[ArrayView]:
    """The entries grouped into arrays, the main axis (lowest sorting rank) first."""
    views: dict[tuple, ArrayView] = {}
    for e in entries:
        key = (e.array_type, e.array_name, e.unit)
        view = views.get(key)
        if view is None:
            view = views[key] = ArrayView(e.array_type, e.array_name, e.unit, e.data_type)
        role = e.buffer_format if e.buffer_format != V.CHUNK_TRANSFORM else V.CHUNK_TRANSFORM
        view.columns[role] = e
        if e.sorting_rank is not None:
            rank = int(e.sorting_rank)
            view.sorting_rank = rank if view.sorting_rank is None else min(rank, view.sorting_rank)
        if e.transform in V.NULL_MARKING_TRANSFORMS:
            view.null_marked = True
        if e.buffer_format not in (V.CHUNK_TRANSFORM,) and e.data_type:
            view.data_type = e.data_type
    return sorted(views.values(), key=lambda v: (v.sorting_rank is None, v.sorting_rank or 0))
