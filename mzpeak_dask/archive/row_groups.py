"""Streaming a signal data member as row groups of a fixed size in points, cut at item
boundaries.

Row groups hold whole spectra (so reading one spectrum touches one row group) of about
``target`` points: a row group ends at the last spectrum boundary at or before ``target``
points, or after the first spectrum when that one alone is larger. Each partition's rows are
cut on their own (workers write them, :mod:`.parts`), so the cuts depend on the spectra and the
partitions, never on the number of workers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..support.arrow_build import to_numpy

Weights = Callable[[pa.Table], np.ndarray]


class RowGroupWriter:
    """Buffers ordered tables and writes them as item-aligned row groups; ``weights`` gives
    the points of each row of a table (the layout's ``row_weights``)."""

    def __init__(
        self,
        writer: pq.ParquetWriter,
        index_path: tuple[str, str],
        target: int,
        weights: Weights,
    ):
        self.writer = writer
        self.index_path = index_path  # (struct column, index child)
        self.target = target
        self.weights = weights
        self._tables: list[pa.Table] = []
        self._rows = 0
        self._weight = 0
        self.row_groups = 0

    def write(self, table: pa.Table) -> None:
        """Append ``table`` (whose last item is complete) and flush full row groups."""
        if table.num_rows == 0:
            return
        self._tables.append(table)
        self._rows += table.num_rows
        self._weight += int(self.weights(table).sum())
        if self._weight >= self.target:
            self._flush()

    def close(self) -> None:
        if self._rows:
            self._flush(final=True)

    def _flush(self, final: bool = False) -> None:
        """Write every complete row group in the buffer (all of it when ``final``)."""
        buffered = pa.concat_tables(self._tables)
        index = pc.struct_field(buffered.column(self.index_path[0]), self.index_path[1])
        index = to_numpy(index)
        weight = np.cumsum(self.weights(buffered))
        # item boundaries: row positions where a new item starts, plus the end
        boundaries = np.append(np.flatnonzero(index[1:] != index[:-1]) + 1, len(index))
        ends = weight[boundaries - 1]  # cumulative weight at each boundary
        start, consumed = 0, 0
        while start < len(index):
            budget = consumed + self.target
            if not final and weight[-1] - consumed < self.target:
                break
            last = int(np.searchsorted(ends, budget, side="right")) - 1
            first_after = int(np.searchsorted(boundaries, start, side="right"))
            cut = int(boundaries[max(last, first_after)])
            self.writer.write_table(buffered.slice(start, cut - start), row_group_size=cut - start)
            self.row_groups += 1
            start, consumed = cut, int(weight[cut - 1])
        rest = buffered.slice(start)
        self._tables = [rest] if rest.num_rows else []
        self._rows = rest.num_rows
        self._weight = int(weight[-1] - consumed) if len(index) else 0
