"""The coordinator: encoded partitions, in order, -> the members of one archive.

Workers number items from 0 within their partition; the assembler rebases every index column
by the running count of its entity, streams the signal rows into their data member as
item-aligned row groups, spills metadata rows to the staging folder, and at the end writes the
packed metadata members, the footers and ``mzpeak_index.json`` (last).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field, replace
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from .. import layouts
from .. import vocabulary as V
from ..contracts import PEAKS, EncodedPartition, EncodeSpec
from ..layouts import array_index
from ..layouts.schema import SignalSchema
from ..options import ConvertOptions
from ..tables.chromatogram_metadata import CHROMATOGRAM_TYPE_STRUCT, PRODUCT_TYPE_STRUCT
from ..tables.spectrum_metadata import (
    PRECURSOR_TYPE_STRUCT,
    SCAN_TYPE_STRUCT,
    SELECTED_ION_TYPE_STRUCT,
    SPECTRUM_TYPE_STRUCT,
)
from . import index as archive_index
from .container import Container, Staging
from .packed_tables import TableSpill, column_values, packed_batches
from .parquet import data_writer_properties, metadata_writer_properties
from .row_groups import RowGroupWriter

# packed tables of each entity's metadata member, in column order, and their index fields
METADATA_TABLES = {
    V.SPECTRUM: {
        "spectrum": SPECTRUM_TYPE_STRUCT,
        "scan": SCAN_TYPE_STRUCT,
        "precursor": PRECURSOR_TYPE_STRUCT,
        "selected_ion": SELECTED_ION_TYPE_STRUCT,
    },
    V.WAVELENGTH_SPECTRUM: {"spectrum": SPECTRUM_TYPE_STRUCT, "scan": SCAN_TYPE_STRUCT},
    V.CHROMATOGRAM: {
        "chromatogram": CHROMATOGRAM_TYPE_STRUCT,
        "precursor": PRECURSOR_TYPE_STRUCT,
        "selected_ion": SELECTED_ION_TYPE_STRUCT,
        "product": PRODUCT_TYPE_STRUCT,
    },
}
INDEX_FIELDS = {"spectrum": "index", "chromatogram": "index"}  # others: source_index
WITH_REFS = {"precursor", "selected_ion"}


def rebase(struct: pa.StructArray, name: str, offset: int) -> pa.StructArray:
    """Add ``offset`` to the struct's index field ``name``."""
    if offset == 0 or len(struct) == 0:
        return struct
    position = struct.type.get_field_index(name)
    children = struct.flatten()
    children[position] = pa.compute.add(children[position], pa.scalar(offset, pa.uint64()))
    return pa.StructArray.from_arrays(children, fields=list(struct.type))


def _rebase_table(table: pa.Table, prefix: str, name: str, offset: int) -> pa.Table:
    column = table.column(prefix)
    chunks = [rebase(chunk, name, offset) for chunk in column.chunks]
    return pa.table({prefix: pa.chunked_array(chunks, type=column.type)})


class DataMember:
    """A signal data member being written: Parquet writer + item-aligned row groups."""

    def __init__(
        self, sink: IO[bytes] | str, entity: str, schema: SignalSchema, options: ConvertOptions
    ):
        layout = layouts.layout_of(options)
        self.context = V.CONTEXT[entity]
        self.prefix = layout.PREFIX
        self.index_name = schema.index_column
        self.arrow_schema = layouts.table_schema(schema, options)
        self.entries = layout.array_index(schema, options)
        self.ordered = True  # every item's main axis ascending so far
        props = data_writer_properties(
            self.arrow_schema, options, f"{self.prefix}.{self.index_name}"
        )
        self.writer = pq.ParquetWriter(sink, self.arrow_schema, **props)
        self.rows = RowGroupWriter(
            self.writer,
            (self.prefix, self.index_name),
            options.row_group_points,
            layout.row_weights,
        )

    def write(self, table: pa.Table, offset: int, ordered: bool = True) -> None:
        self.rows.write(_rebase_table(table, self.prefix, self.index_name, offset))
        self.ordered = self.ordered and ordered

    @property
    def array_index(self) -> str:
        """The array index JSON, declaring the main axis sorted only if every item was."""
        entries = array_index.declared_sorting(self.entries, self.ordered)
        return array_index.dumps(self.prefix, entries)

    def close(self, metadata: dict[str, str]) -> None:
        self.rows.close()
        self.writer.add_key_value_metadata(
            {f"{self.context}_array_index": self.array_index, **metadata}
        )
        self.writer.close()


@dataclass
class EntityState:
    count: int = 0
    points: int = 0
    data: DataMember | None = None
    spills: dict[str, TableSpill] = field(default_factory=dict)


class RunAssembler:
    def __init__(self, spec: EncodeSpec, container: Container, staging: Staging):
        self.spec = spec
        self.container = container
        self.staging = staging
        self.entities: dict[str, EntityState] = {}
        self._stack = contextlib.ExitStack()
        self.expected_sequence = 0
        self._state(V.SPECTRUM)  # spectra_metadata always exists
        self.peaks: DataMember | None = None  # spectra_peaks.parquet, opened on first use
        self.peak_spectra = self.peak_points = self.centroid_points = 0

    def _state(self, entity: str) -> EntityState:
        state = self.entities.get(entity)
        if state is None:
            state = self.entities[entity] = EntityState()
            for name, struct_type in METADATA_TABLES[entity].items():
                path = self.staging.file(f"{V.CONTEXT[entity]}-{name}.arrows")
                state.spills[name] = TableSpill(path, name, struct_type, name in WITH_REFS)
        return state

    def add(self, part: EncodedPartition) -> None:
        """Append one encoded partition (partitions must arrive in sequence order)."""
        if part.sequence != self.expected_sequence:
            raise RuntimeError(f"partition {part.sequence} arrived before {self.expected_sequence}")
        self.expected_sequence += 1
        for entity, count in part.counts.items():
            state = self._state(entity)
            offset = state.count
            if state.data is None:
                state.data = self._data_member(entity)
            state.data.write(part.data[entity], offset, entity not in part.unsorted)
            for name, struct in part.metadata[entity].items():
                if name not in state.spills:
                    continue  # e.g. precursors of UV spectra, which have none
                field_name = INDEX_FIELDS.get(name, "source_index")
                refs = part.selected_ion_refs[entity] if name == "selected_ion" else None
                if name == "precursor":
                    refs = pa.compute.struct_field(struct, "precursor_id").to_pylist()
                state.spills[name].append(rebase(struct, field_name, offset), refs)
            if entity == V.SPECTRUM and part.peaks is not None and part.peaks.num_rows:
                self._write_peaks(part, offset)  # no peak list at all: no member
            state.count += count
            state.points += part.points[entity]

    def _data_member(self, entity: str) -> DataMember:
        """An entity's data member, opened with its first items: an entity without items has
        none (the TypeScript reader rejects a Parquet file without a row group, and both
        reference readers open an archive without the member). The spectrum data member is
        streamed straight into the archive as its first member; the others are staged."""
        name = V.MEMBER_NAMES[(entity, V.DATA_ARRAYS)]
        if entity == V.SPECTRUM:
            sink: IO[bytes] | str = self._stack.enter_context(self.container.stream(name))
        else:
            sink = str(self.staging.file(name))
        return DataMember(sink, entity, self.spec.schemas[entity], self.spec.options)

    def _write_peaks(self, part: EncodedPartition, offset: int) -> None:
        if self.peaks is None:
            path = self.staging.file(V.MEMBER_NAMES[(V.SPECTRUM, V.PEAKS)])
            self.peaks = DataMember(
                str(path),
                V.SPECTRUM,
                self.spec.schemas[PEAKS],
                replace(self.spec.options, layout="point"),
            )
        self.peaks.write(part.peaks, offset, PEAKS not in part.unsorted)
        self.peak_spectra += part.peak_spectra
        self.peak_points += part.peak_points
        self.centroid_points += part.centroid_points

    def finish(self, footer: dict[str, Any]) -> dict[str, Any]:
        """Write the remaining members and the index; returns items and points per entity (the
        spectrum points include centroid spectra kept in spectra_peaks)."""
        footer_kv = {k: json.dumps(v, separators=(",", ":")) for k, v in footer.items()}
        spectra = self._state(V.SPECTRUM)
        if spectra.data is not None:
            spectra.data.close(self._counts(V.SPECTRUM))
        self._stack.close()
        if self.peaks is not None:
            self.peaks.close(
                {
                    "spectrum_count": str(self.peak_spectra),
                    "spectrum_data_point_count": str(self.peak_points),
                }
            )
            name = V.MEMBER_NAMES[(V.SPECTRUM, V.PEAKS)]
            self.container.add_file(name, self.staging.file(name))
        for state in self.entities.values():
            for spill in state.spills.values():
                spill.close()
        ids = column_values(spectra.spills["spectrum"], "id")
        self._metadata_member(V.SPECTRUM, ids, footer_kv)
        for entity in (V.WAVELENGTH_SPECTRUM, V.CHROMATOGRAM):
            state = self.entities.get(entity)
            if state is None or state.count == 0:
                continue
            extra = footer_kv if entity == V.WAVELENGTH_SPECTRUM else {}
            self._metadata_member(entity, ids, extra)
            data_kv = self._counts(entity, points_only=True)
            if entity == V.CHROMATOGRAM:
                data_kv |= footer_kv
            state.data.close(data_kv)
            name = V.MEMBER_NAMES[(entity, V.DATA_ARRAYS)]
            self.container.add_file(name, self.staging.file(name))
        names = [name for name, _ in self.container.members]
        self.container.add_bytes(V.INDEX_MEMBER, archive_index.build(names, footer))
        counts = {
            entity: {"count": s.count, "points": s.points} for entity, s in self.entities.items()
        }
        counts[V.SPECTRUM]["points"] += self.centroid_points  # spectra kept in the peaks member
        return counts

    def _counts(self, entity: str, points_only: bool = False) -> dict[str, str]:
        state = self.entities.get(entity) or EntityState()
        context = V.CONTEXT[entity]
        counts = {f"{context}_data_point_count": str(state.points)}
        if not points_only:
            counts[f"{context}_count"] = str(state.count)
        return counts

    def _metadata_member(self, entity: str, ids: pa.Array, extra: dict[str, str]) -> None:
        state = self._state(entity)
        name = V.MEMBER_NAMES[(entity, V.METADATA)]
        path = self.staging.file(name)
        first = next(iter(METADATA_TABLES[entity]))
        schema = pa.schema([pa.field(n, t) for n, t in METADATA_TABLES[entity].items()])
        props = metadata_writer_properties(schema, self.spec.options, f"{first}.index")
        with pq.ParquetWriter(str(path), schema, **props) as writer:
            for batch in packed_batches(state.spills, ids):
                writer.write_batch(batch)
            writer.add_key_value_metadata({**self._counts(entity), **extra})
        self.container.add_file(name, path)

    def abort(self) -> None:
        members = [s.data for s in self.entities.values()] + [self.peaks]
        for member in members:
            if member is not None:
                with contextlib.suppress(Exception):
                    member.writer.close()
        with contextlib.suppress(Exception):
            self._stack.close()
        for state in self.entities.values():
            for spill in state.spills.values():
                with contextlib.suppress(Exception):
                    spill.close()
