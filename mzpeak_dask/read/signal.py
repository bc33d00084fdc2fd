"""Reading one item's signal from a data member (point or chunked layout).

Columns are located through the array index, never by name. Reading item ``i`` touches only the
row groups whose index-column statistics can contain it (row groups are item-aligned in files
this package writes, so that is one row group); the last row group read is cached, which makes
iteration in index order read every row group once.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import vocabulary as V
from ..codecs import delta, numpress
from ..errors import ArchiveError
from ..layouts import array_index as array_index_json
from ..layouts.array_index import ArrayIndexEntry
from ..layouts.chunked import decode_axis
from ..transforms.chunking import chunk_boundaries
from ..transforms.null_marking import fill_intensity, fill_nulls
from .parquet_checks import damaged, open_parquet


@dataclass
class ArrayView:
    """One logical signal array and the columns that hold it."""

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
    ordered = sorted(views.values(), key=lambda v: (v.sorting_rank is None, v.sorting_rank or 0))
    return ordered


class SignalReader:
    """Random and sequential access to the items of one data member."""

    def __init__(self, buffer: pa.Buffer, context: str, name: str):
        self.name = name  # "ARCHIVE: MEMBER" (or the member alone), for errors
        self.file = open_parquet(buffer, name)
        kv = self.file.metadata.metadata or {}
        key = f"{context}_array_index".encode()
        if key not in kv:
            raise ArchiveError(f"{name}: no {key.decode()} in the footer")
        try:
            self.prefix, entries = array_index_json.loads(kv[key])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ArchiveError(f"{name}: unreadable {key.decode()} ({exc})") from None
        if not isinstance(self.prefix, str):
            raise ArchiveError(f"{name}: the {key.decode()} prefix is not a string")
        self.index_name = f"{context}_index"
        with damaged(name):
            self.views = group_entries(entries)
            if not self.views:
                raise ArchiveError(f"{name}: the array index lists no arrays")
            self.main = self.views[0]
            self.chunked = any(
                V.CHUNK_VALUES in v.columns or V.CHUNK_START in v.columns for v in self.views
            )
            self._stats = self._index_statistics()
        self._cached: tuple[int, pa.StructArray, np.ndarray] | None = None

    def _index_statistics(self) -> tuple[np.ndarray, np.ndarray]:
        md = self.file.metadata
        path = f"{self.prefix}.{self.index_name}"
        column = next((j for j in range(md.num_columns) if md.schema.column(j).path == path), None)
        if column is None:
            raise ArchiveError(f"{self.name}: no index column {path}")
        lows, highs = [], []
        for i in range(md.num_row_groups):
            stats = md.row_group(i).column(column).statistics
            if stats is not None and stats.has_min_max:
                lows.append(stats.min)
                highs.append(stats.max)
            else:  # no statistics: this row group may hold anything
                lows.append(0)
                highs.append(np.iinfo(np.uint64).max)
        return np.array(lows, dtype=np.uint64), np.array(highs, dtype=np.uint64)

    @property
    def row_groups(self) -> int:
        return self.file.metadata.num_row_groups

    def groups_for(self, items: np.ndarray) -> list[int]:
        """The row groups whose index statistics can hold one of ``items`` (sorted)."""
        items = np.asarray(items, dtype=np.uint64)
        if not len(items):
            return []
        lows, highs = self._stats
        first = np.searchsorted(items, lows, side="left")
        keep = (first < len(items)) & (items[np.minimum(first, len(items) - 1)] <= highs)
        return np.flatnonzero(keep).tolist()

    def item_indices(self) -> np.ndarray:
        """The distinct items that have rows in this member (reads the index column only)."""
        path = f"{self.prefix}.{self.index_name}"
        table = self.file.read(columns=[path], use_threads=False)
        index = pc.struct_field(table.column(0), self.index_name)
        return np.unique(index.to_numpy(zero_copy_only=False))

    def decode_rows(self, rows: pa.StructArray) -> tuple[dict[int, tuple], np.ndarray]:
        """Decode any chunk rows of this (chunked) member: per array view ``(values, valid)``
        over all the rows' points, and the number of points of each row."""
        with damaged(self.name):
            return self._decode_chunks(rows, with_lengths=True)

    def _row_group(self, i: int) -> tuple[pa.StructArray, np.ndarray]:
        if self._cached is None or self._cached[0] != i:
            table = self.file.read_row_group(i, use_threads=False)
            struct = table.column(self.prefix).combine_chunks()
            if isinstance(struct, pa.ChunkedArray):
                struct = struct.combine_chunks()
            index = struct.field(self.index_name).to_numpy(zero_copy_only=False)
            self._cached = (i, struct, index)
        return self._cached[1], self._cached[2]

    def rows(self, item: int) -> pa.StructArray | None:
        """The rows of ``item`` (from every row group that can hold it)."""
        lows, highs = self._stats
        groups = np.flatnonzero((lows <= item) & (highs >= item))
        parts = []
        for g in groups.tolist():
            struct, index = self._row_group(g)
            a = int(np.searchsorted(index, item, side="left"))
            b = int(np.searchsorted(index, item, side="right"))
            if b > a:
                parts.append(struct.slice(a, b - a))
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else pa.concat_arrays(parts)

    def read(self, item: int, model: np.ndarray | None) -> dict[str, np.ndarray]:
        """``{array name: values}`` for one item; empty when the item has no points."""
        with damaged(self.name):
            return self._read(item, model)

    def _read(self, item: int, model: np.ndarray | None) -> dict[str, np.ndarray]:
        rows = self.rows(item)
        if rows is None or len(rows) == 0:
            return {}
        raw = self._decode_chunks(rows) if self.chunked else self._decode_points(rows)
        return self._finish(raw, model)

    def read_chunked(
        self, item: int, model: np.ndarray | None, width: float
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Like :meth:`read`, plus the point offsets (n+1) of the item's chunks: the stored
        chunks of a chunked archive, or for a point archive the chunks the chunked layout
        would make with ``width`` (computed on the stored, null-marked axis, as the writer
        does)."""
        with damaged(self.name):
            return self._read_chunked(item, model, width)

    def _read_chunked(
        self, item: int, model: np.ndarray | None, width: float
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        rows = self.rows(item)
        if rows is None or len(rows) == 0:
            return {}, np.zeros(1, dtype=np.int64)
        if self.chunked:
            raw, lengths = self._decode_chunks(rows, with_lengths=True)
            offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        else:
            raw = self._decode_points(rows)
            values, valid = raw[0]
            valid = np.ones(len(values), bool) if valid is None else valid
            offsets = chunk_boundaries(values, valid, width, min_points=2)
        return self._finish(raw, model), offsets

    def _decode_points(
        self, rows: pa.StructArray
    ) -> dict[int, tuple[np.ndarray, np.ndarray | None]]:
        out = {}
        for k, view in enumerate(self.views):
            entry = view.columns.get(V.POINT)
            if entry is not None:
                out[k] = _to_numpy(rows.field(entry.column))
        return out

    def _decode_chunks(self, rows: pa.StructArray, with_lengths: bool = False) -> Any:
        fast = self._decode_plain_chunks(rows)
        if fast is not None:
            raw, lengths = fast
            return (raw, lengths) if with_lengths else raw
        main = self.main.columns
        starts = rows.field(main[V.CHUNK_START].column).to_numpy(zero_copy_only=False)
        encodings = rows.field(main[V.CHUNK_ENCODING].column).to_pylist()
        main_values = _lists(rows.field(main[V.CHUNK_VALUES].column))
        packed_main = (
            _lists(rows.field(main[V.CHUNK_TRANSFORM].column))
            if V.CHUNK_TRANSFORM in main
            else [None] * len(rows)
        )
        secondary = {k: self._secondary(rows, v) for k, v in enumerate(self.views) if k > 0}
        sizes = _chunk_sizes(secondary, main_values, len(rows))
        parts = defaultdict(list)
        for c in range(len(rows)):
            values, valid = main_values[c] or (None, None)
            packed = packed_main[c][0] if packed_main[c] else None
            decoded = decode_axis(starts[c], encodings[c], values, valid, packed, sizes[c])
            parts[0].append(decoded)
            for k, chunks in secondary.items():
                parts[k].append(
                    chunks[c]
                    if chunks[c] is not None
                    else (np.zeros(sizes[c], self.views[k].dtype), np.zeros(sizes[c], bool))
                )
        raw = {k: _concat(v) for k, v in parts.items()}
        if with_lengths:
            return raw, np.array([len(p[0]) for p in parts[0]], dtype=np.int64)
        return raw

    def _decode_plain_chunks(self, rows: pa.StructArray) -> tuple[dict, np.ndarray] | None:
        """All chunks at once when they are delta/basic and every other array is a plain list
        present in every row (the common case); None otherwise (decode chunk by chunk)."""
        main = self.main.columns
        if V.CHUNK_TRANSFORM in main:
            return None
        encodings = rows.field(main[V.CHUNK_ENCODING].column)
        is_delta = pc.equal(encodings, V.DELTA_ENCODING).to_numpy(zero_copy_only=False)
        is_basic = pc.equal(encodings, V.NO_COMPRESSION).to_numpy(zero_copy_only=False)
        if not np.all(is_delta | is_basic):
            return None
        lists = {}
        for k, view in enumerate(self.views[1:], start=1):
            entry = view.columns.get(V.CHUNK_SECONDARY)
            column = rows.field(entry.column) if entry is not None else None
            if column is None or column.null_count:
                return None
            lists[k] = _flat(column)
        if not lists:
            return None
        sizes = np.diff(next(iter(lists.values()))[2])
        if any(not np.array_equal(np.diff(v[2]), sizes) for v in lists.values()):
            return None
        values_column = rows.field(main[V.CHUNK_VALUES].column)
        values, valid, offsets = _flat(values_column)
        starts = rows.field(main[V.CHUNK_START].column).to_numpy(zero_copy_only=False)
        decoded = delta.decode_chunks(
            starts,
            sizes,
            is_delta,
            values.astype(np.float64),
            np.ones(len(values), bool) if valid is None else valid,
            offsets,
        )
        if decoded is None:
            return None
        raw = {0: decoded}
        raw.update({k: (v[0], v[1]) for k, v in lists.items()})
        return raw, sizes

    def _secondary(self, rows: pa.StructArray, view: ArrayView) -> list:
        if V.CHUNK_SECONDARY in view.columns:
            return _lists(rows.field(view.columns[V.CHUNK_SECONDARY].column))
        entry = view.columns.get(V.CHUNK_TRANSFORM)
        if entry is None:
            return [None] * len(rows)
        decoder = numpress.DECODERS.get(entry.transform or "")
        if decoder is None:
            raise ArchiveError(f"{self.name}: unsupported transform {entry.transform}")
        out = []
        for item in _lists(rows.field(entry.column)):
            out.append(None if item is None else (decoder(item[0]), None))
        return out

    def _finish(self, raw: dict[int, tuple], model: np.ndarray | None) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        main_valid = raw.get(0, (None, None))[1]
        for k, (values, valid) in raw.items():
            view = self.views[k]
            if valid is not None and not valid.any():
                continue  # the column is entirely null for this item: the array is absent
            if valid is not None and not valid.all():
                if k == 0:
                    values = fill_nulls(np.asarray(values, np.float64), valid, model)
                elif view.null_marked or view.array_type == V.INTENSITY_ARRAY:
                    values = fill_intensity(values, valid)
                elif main_valid is not None and np.array_equal(valid, main_valid):
                    values = fill_intensity(values, valid)
            name = view.array_name if view.array_name not in out else f"{view.array_name} ({k})"
            out[name] = np.asarray(values).astype(view.dtype, copy=False)
        return out


def _to_numpy(array: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    if array.null_count == 0:
        return array.to_numpy(zero_copy_only=False), None
    valid = np.asarray(array.is_valid())
    return array.fill_null(pa.scalar(0, type=array.type)).to_numpy(zero_copy_only=False), valid


def _flat(column: pa.Array) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """A list column's values (and validity) for its rows, with offsets from 0."""
    offsets = column.offsets.to_numpy()
    base = int(offsets[0])
    values, valid = _to_numpy(column.values.slice(base, int(offsets[-1]) - base))
    return values, valid, (offsets - base).astype(np.int64)


def _lists(column: pa.Array) -> list:
    """Per row: None (null list) or (values, valid-or-None)."""
    offsets = column.offsets.to_numpy()
    values, valid = _to_numpy(column.values)
    row_valid = np.asarray(column.is_valid())
    out = []
    for r in range(len(column)):
        if not row_valid[r]:
            out.append(None)
            continue
        a, b = offsets[r], offsets[r + 1]
        out.append((values[a:b], None if valid is None else valid[a:b]))
    return out


def _chunk_sizes(secondary: dict, main_values: list, rows: int) -> list[int | None]:
    sizes: list[int | None] = []
    for c in range(rows):
        size = next(
            (len(chunks[c][0]) for chunks in secondary.values() if chunks[c] is not None), None
        )
        sizes.append(size)
    return sizes


def _concat(
    parts: list[tuple[np.ndarray, np.ndarray | None]],
) -> tuple[np.ndarray, np.ndarray | None]:
    values = np.concatenate([p[0] for p in parts])
    if all(p[1] is None for p in parts):
        return values, None
    valid = np.concatenate([np.ones(len(p[0]), bool) if p[1] is None else p[1] for p in parts])
    return values, valid


__all__ = ["ArrayView", "SignalReader", "pc"]
