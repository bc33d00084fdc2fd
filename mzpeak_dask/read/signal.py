"""Reading one item's signal from a data member (point or chunked layout).

Columns are located through the array index, never by name. Reading item ``i`` touches only the
row groups whose index-column statistics can contain it (row groups are item-aligned in files
this package writes, so that is one row group); the last row group read is cached, which makes
iteration in index order read every row group once. After every read the mapped pages of the
row groups read are released (``release``, see :mod:`mzpeak_dask.read.storage`), so reading a
whole member never keeps the member in memory.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import ArchiveError
from ..format import vocabulary as V
from ..layouts import LAYOUTS, stored_layout
from ..layouts import array_index as array_index_json
from ..layouts.array_index import group_entries
from ..transforms.chunking import chunk_boundaries
from ..transforms.null_marking import fill_intensity, fill_nulls
from .parquet_checks import damaged, open_parquet


class SignalReader:
    """Random and sequential access to the items of one data member."""

    def __init__(
        self,
        buffer: pa.Buffer,
        context: str,
        name: str,
        role: str = "",
        release: Callable[[int, int | None], None] | None = None,
        metadata: pq.FileMetaData | None = None,
    ):
        self.name = name  # "ARCHIVE: MEMBER" (or the member alone), for errors
        self.file = open_parquet(buffer, name, metadata)  # metadata: the footer, parsed
        # drops the mapped pages of a byte range of the member from memory (None: nothing to)
        self._release = release
        # a remote member fetches a row group's column chunks in one request before reading it
        self._prefetch = getattr(buffer, "prefetch", None)
        kv = self.file.metadata.metadata or {}
        key = f"{context}_array_index".encode()
        if key not in kv:
            listed = f"listed as {role}, but " if role else ""
            raise ArchiveError(f"{name}: {listed}no {key.decode()} in its footer")
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
            self.layout = stored_layout(self.views)  # decodes rows (layouts/point, chunked)
            self.chunked = self.layout is LAYOUTS["chunked"]
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

    def index_bounds(self, groups: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The lowest and highest item that row groups ``groups`` can hold (from the index
        statistics; 0 and the largest uint64 for a row group without them)."""
        lows, highs = self._stats
        return lows[groups], highs[groups]

    def groups_for(self, items: np.ndarray) -> list[int]:
        """The row groups whose index statistics can hold one of ``items`` (sorted)."""
        items = np.asarray(items, dtype=np.uint64)
        if not len(items):
            return []
        lows, highs = self._stats
        first = np.searchsorted(items, lows, side="left")
        keep = (first < len(items)) & (items[np.minimum(first, len(items) - 1)] <= highs)
        return np.flatnonzero(keep).tolist()

    def read_groups(self, groups: list[int], columns: list[str] | None = None) -> pa.Table:
        """Row groups ``groups`` (of columns ``columns``, paths; default all) in one read;
        their mapped pages are released after it."""
        table = self.file.read_row_groups(groups, columns=columns, use_threads=False)
        self.release(groups)
        return table

    def release(self, groups: list[int] | None = None) -> None:
        """Drop the mapped pages of row groups ``groups`` (default: the whole member)."""
        if self._release is None:
            return
        if groups is None:
            self._release(0, None)
            return
        spans = [_span(self.file.metadata.row_group(g)) for g in groups]
        if spans:
            self._release(min(a for a, _ in spans), max(b for _, b in spans))

    def item_indices(self) -> np.ndarray:
        """The distinct items that have rows in this member (reads the index column only)."""
        path = f"{self.prefix}.{self.index_name}"
        table = self.file.read(columns=[path], use_threads=False)
        self.release()
        index = pc.struct_field(table.column(0), self.index_name)
        return np.unique(index.to_numpy(zero_copy_only=False))

    def decode_rows(self, rows: pa.StructArray) -> tuple[dict[int, tuple], np.ndarray]:
        """Decode any chunk rows of this (chunked) member: per array view ``(values, valid)``
        over all the rows' points, and the number of points of each row."""
        with damaged(self.name):
            return self.layout.decode(rows, self.views, self.name)

    def _row_group(self, i: int) -> tuple[pa.StructArray, np.ndarray]:
        if self._cached is None or self._cached[0] != i:
            if self._prefetch is not None:
                self._prefetch(*_span(self.file.metadata.row_group(i)))
            table = self.read_groups([i])
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
            # the item in the index's own type: a Python int against a uint64 index would
            # make numpy convert the whole index to float64 on every call
            key = index.dtype.type(item)
            a = int(np.searchsorted(index, key, side="left"))
            b = int(np.searchsorted(index, key, side="right"))
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
        raw, _ = self.layout.decode(rows, self.views, self.name)
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
        raw, lengths = self.layout.decode(rows, self.views, self.name)
        if self.chunked:
            offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        else:
            values, valid = raw[0]
            valid = np.ones(len(values), bool) if valid is None else valid
            offsets = chunk_boundaries(values, valid, width, min_points=2)
        return self._finish(raw, model), offsets

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


def _span(group: pq.RowGroupMetaData) -> tuple[int, int]:
    """The bytes ``[start, stop)`` that hold a row group's column chunks."""
    starts, stops = [], []
    for j in range(group.num_columns):
        chunk = group.column(j)
        start = chunk.data_page_offset
        if chunk.has_dictionary_page and chunk.dictionary_page_offset is not None:
            start = min(start, chunk.dictionary_page_offset)
        starts.append(start)
        stops.append(start + chunk.total_compressed_size)
    return min(starts, default=0), max(stops, default=0)


__all__ = ["SignalReader"]
