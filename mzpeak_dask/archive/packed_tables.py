"""The packed metadata member: several independent tables side by side in one Parquet file.

While a run converts, each table's rows (already rebased to global indices) are spilled to an
Arrow IPC stream in the staging folder, so the coordinator holds no run-sized state. At the end
the streams are read back in lockstep and written as row groups of the packed file: table T's
rows are packed from the top and padded with valid, all-null structs (format doc section 2.4).
Precursor references (``spectrumRef`` ids) are resolved to spectrum indices here, once every
spectrum id is known.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ..support.arrow_build import from_list
from ..tables.builder import pad_struct

REF = "ref"  # spilled side column: the precursor spectrumRef of a precursor / selected ion row
PACK_ROWS = 1 << 16
SPILL_BUFFER = 1 << 20  # bytes a spill gathers before it writes them (one system call)


class TableSpill:
    """An append-only Arrow IPC stream of one struct table (plus optional side columns)."""

    def __init__(self, path: Path, name: str, struct_type: pa.StructType, with_ref: bool):
        fields = [pa.field(name, struct_type)]
        if with_ref:
            fields.append(pa.field(REF, pa.large_string()))
        self.schema = pa.schema(fields)
        self.path = path
        self.rows = 0
        self._sink = pa.output_stream(str(path), buffer_size=SPILL_BUFFER)
        self._writer = pa.ipc.new_stream(self._sink, self.schema)

    def append(self, struct: pa.Array, refs: list | None = None) -> None:
        if len(struct) == 0:
            return
        columns = [struct]
        if len(self.schema) > 1:
            columns.append(
                from_list(refs, pa.large_string())
                if refs is not None
                else pa.nulls(len(struct), pa.large_string())
            )
        self._writer.write_batch(pa.record_batch(columns, schema=self.schema))
        self.rows += len(struct)

    def close(self) -> None:
        self._writer.close()
        self._sink.close()

    def batches(self, size: int = PACK_ROWS) -> Iterator[pa.RecordBatch]:
        """Read back in batches of exactly ``size`` rows (the last may be shorter)."""
        carry: list[pa.RecordBatch] = []
        carried = 0
        with pa.memory_map(str(self.path)) as source:
            for batch in pa.ipc.open_stream(source):
                carry.append(batch)
                carried += batch.num_rows
                while carried >= size:
                    table = pa.Table.from_batches(carry).combine_chunks()
                    yield table.slice(0, size).to_batches()[0]
                    rest = table.slice(size)
                    carry = rest.to_batches() if rest.num_rows else []
                    carried = rest.num_rows
            if carried:
                yield pa.Table.from_batches(carry).combine_chunks().to_batches()[0]


def column_values(spill: TableSpill, field: str) -> pa.Array:
    """One child of the spilled struct, for the whole run (e.g. every spectrum id)."""
    parts = [pc.struct_field(b.column(0), field) for b in spill.batches()]
    return pa.concat_arrays(parts) if parts else pa.nulls(0, pa.large_string())


def resolve_precursors(batch: pa.RecordBatch, ids: pa.Array) -> pa.StructArray:
    """Fill ``precursor_index`` from the spilled spectrumRef ids."""
    struct = batch.column(0)
    refs = batch.column(REF)
    index = pc.index_in(refs, value_set=ids.cast(pa.large_string()))
    position = struct.type.get_field_index("precursor_index")
    children = struct.flatten()
    children[position] = index.cast(pa.uint64())
    return pa.StructArray.from_arrays(children, fields=list(struct.type))


def packed_batches(spills: dict[str, TableSpill], ids: pa.Array | None) -> Iterator[pa.RecordBatch]:
    """Row batches of the packed file: one struct column per table, padded to equal length."""
    names = list(spills)
    iterators = {n: spills[n].batches() for n in names}
    schema = pa.schema([pa.field(n, spills[n].schema.field(0).type) for n in names])
    total = max((s.rows for s in spills.values()), default=0)
    done = 0
    while done < total:
        length = min(PACK_ROWS, total - done)
        columns = []
        for n in names:
            batch = next(iterators[n], None)
            struct = _struct_of(batch, spills[n], ids)
            columns.append(pad_struct(struct, length))
        yield pa.record_batch(columns, schema=schema)
        done += length


def _struct_of(
    batch: pa.RecordBatch | None, spill: TableSpill, ids: pa.Array | None
) -> pa.StructArray:
    struct_type = spill.schema.field(0).type
    if batch is None:
        return pa.StructArray.from_arrays(
            [pa.nulls(0, f.type) for f in struct_type], fields=list(struct_type)
        )
    if REF in batch.schema.names and ids is not None:
        return resolve_precursors(batch, ids)
    return batch.column(0)
