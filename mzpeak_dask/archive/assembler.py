"""Written partitions, in order, -> the members of one archive.

Each partition's task writes its signal rows as finished Parquet parts with global indices
(:mod:`.parts`); the assembler, in the task that finishes the run, stitches each data member
from its parts, copying bytes and writing one footer (:mod:`mzpeak_dask.parquet_stitch`),
spills the (already rebased) metadata rows to the staging folder, and at the end writes the
packed metadata members and ``mzpeak_index.json`` (last). It decodes and compresses no signal
page.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from .. import layouts
from ..encode.contracts import PEAKS, EncodedPartition, EncodeSpec
from ..format import vocabulary as V
from ..layouts import array_index
from ..layouts.schema import SignalSchema
from ..options import ConvertOptions
from ..parquet_stitch.splice import PartSplice, Splicer, split_part
from ..tables.chromatogram_metadata import CHROMATOGRAM_TYPE_STRUCT, PRODUCT_TYPE_STRUCT
from ..tables.spectrum_metadata import (
    PRECURSOR_TYPE_STRUCT,
    SCAN_TYPE_STRUCT,
    SELECTED_ION_TYPE_STRUCT,
    SPECTRUM_TYPE_STRUCT,
)
from . import index as archive_index
from .container import Container
from .packed_tables import TableSpill, column_values, packed_batches
from .parquet import metadata_writer_properties
from .parts import empty_part, unpack_rows, write_part
from .staging import Folder

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
WITH_REFS = {"precursor", "selected_ion"}


class DataMember:
    """A signal data member being written: the Parquet parts workers wrote, stitched in order."""

    def __init__(
        self, sink: IO[bytes] | str, entity: str, schema: SignalSchema, options: ConvertOptions
    ):
        layout = layouts.layout_of(options)
        self.context = V.CONTEXT[entity]
        self.prefix = layout.PREFIX
        self.schema, self.options = schema, options
        self.entries = layout.array_index(schema, options)
        self.ordered = True  # every item's main axis ascending so far
        self._file = open(sink, "wb") if isinstance(sink, str) else None  # noqa: SIM115
        self.splicer = Splicer(self._file or sink)

    def add(self, part: pa.Buffer | bytes, splice: PartSplice, ordered: bool = True) -> None:
        """Append a part (a Parquet file of this member's schema, global indices) with its
        footer cut for splicing."""
        self.splicer.add(part, splice)
        self.ordered = self.ordered and ordered

    def write(self, table: pa.Table, offset: int, ordered: bool = True) -> None:
        """Append ``table`` (local indices, shifted by ``offset``) as a part written here."""
        part = write_part(table, self.schema, self.options, offset)
        self.add(part, split_part(part), ordered)

    @property
    def array_index(self) -> str:
        """The array index JSON, declaring the main axis sorted only if every item was."""
        entries = array_index.declared_sorting(self.entries, self.ordered)
        return array_index.dumps(self.prefix, entries)

    def close(self, metadata: dict[str, str]) -> None:
        if not self.splicer.row_groups:  # its items hold no point (an empty TIC)
            self._no_rows()
        self.splicer.close({f"{self.context}_array_index": self.array_index, **metadata})
        self.abort()

    def _no_rows(self) -> None:
        """Make the member one row group of zero rows, in the point layout (there is nothing
        to chunk). A Parquet file without a row group is what the TypeScript reader rejects
        ("Empty Parquet file"), and the reference Python reader reads an item with no rows
        only from a point member whose row groups carry statistics; both read this as items
        without arrays. Leaving the member out would leave that reader nothing to read a
        chromatogram's arrays from (format doc section 10)."""
        self.options = replace(self.options, layout="point", numpress_intensity=None)
        layout = layouts.layout_of(self.options)
        self.prefix, self.entries = layout.PREFIX, layout.array_index(self.schema, self.options)
        part = empty_part(self.schema, self.options)
        self.splicer.forget_empty_parts()  # parts without a row group: none wrote a byte
        self.add(part, split_part(part))

    def abort(self) -> None:
        if self._file is not None:
            self._file.close()


class Sequence:
    """Partitions taken in order, each written with the offsets of the partitions before it:
    the items and points of each entity so far."""

    def __init__(self) -> None:
        self.expected = 0
        self.counts: dict[str, int] = {}
        self.points: dict[str, int] = {}

    def check(self, part: EncodedPartition) -> None:
        """Raise unless ``part`` is the next partition, written with the true offsets."""
        if part.sequence != self.expected:
            raise RuntimeError(f"partition {part.sequence} arrived before {self.expected}")
        for entity in part.counts:
            if part.offsets is None or part.offsets.get(entity, 0) != self.counts.get(entity, 0):
                raise RuntimeError(f"partition {part.sequence} written with the wrong offsets")

    def took(self, part: EncodedPartition) -> None:
        self.expected += 1
        for entity, count in part.counts.items():
            self.counts[entity] = self.counts.get(entity, 0) + count
            self.points[entity] = self.points.get(entity, 0) + part.points[entity]

    def key_value(self, entity: str, points_only: bool = False) -> dict[str, str]:
        """An entity's counts as its members' footers give them."""
        context = V.CONTEXT[entity]
        counts = {f"{context}_data_point_count": str(self.points.get(entity, 0))}
        if not points_only:
            counts[f"{context}_count"] = str(self.counts.get(entity, 0))
        return counts


@dataclass
class EntityState:
    data: DataMember | None = None
    spills: dict[str, TableSpill] = field(default_factory=dict)


class RunAssembler:
    """A whole archive: ``spectra_data.parquet`` streamed into the container as its first
    member, then ``spectra_peaks.parquet``, the packed metadata members and the data members
    of UV spectra and chromatograms (written as files in the staging folder as the partitions
    come, their metadata rows spilled there), added in order, and ``mzpeak_index.json``
    (last)."""

    def __init__(self, spec: EncodeSpec, container: Container, staging: Folder):
        self.spec = spec
        self.container = container
        self.staging = staging
        self.sequence = Sequence()
        self.data: DataMember | None = None  # spectra_data.parquet, opened on first use
        self._stack = contextlib.ExitStack()
        self.peaks: DataMember | None = None  # spectra_peaks.parquet, opened on first use
        self.peak_spectra = self.peak_points = self.centroid_points = 0
        self.entities: dict[str, EntityState] = {}
        self._state(V.SPECTRUM)  # spectra_metadata always exists

    def add(self, part: EncodedPartition) -> None:
        """Append one written partition (partitions must arrive in sequence order, their parts
        written with the offsets of the partitions before them); its packed metadata rows are
        unpacked in place (the caller reads the spectrum ids from them)."""
        self.sequence.check(part)
        for entity in part.counts:
            state = self._state(entity)
            if entity == V.SPECTRUM:
                self._add_spectra(part)
            else:
                data = self._data_member(entity, state)
                data.add(part.data[entity], part.splices[entity], entity not in part.unsorted)
            part.metadata[entity] = {
                name: unpack_rows(rows) for name, rows in part.metadata[entity].items()
            }
            for name, struct in part.metadata[entity].items():
                if name not in state.spills:
                    continue  # e.g. precursors of UV spectra, which have none
                refs = part.selected_ion_refs[entity] if name == "selected_ion" else None
                if name == "precursor":
                    refs = pa.compute.struct_field(struct, "precursor_id").to_pylist()
                state.spills[name].append(struct, refs)
        self.sequence.took(part)

    def _state(self, entity: str) -> EntityState:
        state = self.entities.get(entity)
        if state is None:
            state = self.entities[entity] = EntityState()
            for name, struct_type in METADATA_TABLES[entity].items():
                path = self.staging.file(f"{V.CONTEXT[entity]}-{name}.arrows")
                state.spills[name] = TableSpill(path, name, struct_type, name in WITH_REFS)
        return state

    def _add_spectra(self, part: EncodedPartition) -> None:
        if self.data is None:
            self.data = self._spectrum_data_member()
        spectra, splice = part.data[V.SPECTRUM], part.splices[V.SPECTRUM]
        self.data.add(spectra, splice, V.SPECTRUM not in part.unsorted)
        if part.peaks is not None and part.peak_spectra:
            self._write_peaks(part)  # no peak list at all: no member

    def _spectrum_data_member(self) -> DataMember:
        """The spectrum data member, opened with the first spectra and streamed straight into
        the archive as its first member (an entity without items has no data member: the
        TypeScript reader rejects a Parquet file without a row group, and both reference
        readers open an archive without the member)."""
        name = V.MEMBER_NAMES[(V.SPECTRUM, V.DATA_ARRAYS)]
        sink = self.container.watched(self._stack.enter_context(self.container.stream(name)))
        return DataMember(sink, V.SPECTRUM, self.spec.schemas[V.SPECTRUM], self.spec.options)

    def _write_peaks(self, part: EncodedPartition) -> None:
        if self.peaks is None:
            path = self.staging.file(V.MEMBER_NAMES[(V.SPECTRUM, V.PEAKS)])
            self.peaks = DataMember(
                str(path),
                V.SPECTRUM,
                self.spec.schemas[PEAKS],
                replace(self.spec.options, layout="point", numpress_intensity=None),
            )
        self.peaks.add(part.peaks, part.splices[PEAKS], PEAKS not in part.unsorted)
        self.peak_spectra += part.peak_spectra
        self.peak_points += part.peak_points
        self.centroid_points += part.centroid_points

    def _data_member(self, entity: str, state: EntityState) -> DataMember:
        """The data member of UV spectra or chromatograms, a file in the staging folder,
        opened with the entity's first items."""
        if state.data is None:
            name = V.MEMBER_NAMES[(entity, V.DATA_ARRAYS)]
            path = str(self.staging.file(name))
            state.data = DataMember(path, entity, self.spec.schemas[entity], self.spec.options)
        return state.data

    def finish(self, footer: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Write the remaining members and the index; returns items and points per entity
        (the spectrum points include the centroid spectra kept in spectra_peaks).
        ``footer()``, the file-level metadata, is called once, as late as it can be: the
        spectrum data members and the spectrum metadata's rows are written before it (it
        holds the input's digest, which may still be being computed beside this)."""
        footer = functools.cache(footer)

        @functools.cache
        def footer_kv() -> dict[str, str]:
            return {k: json.dumps(v, separators=(",", ":")) for k, v in footer().items()}

        self._finish_spectrum_signal()
        for name in self._metadata_files(footer_kv):
            self.container.add_file(name, self.staging.file(name))
        members = [name for name, _ in self.container.members]
        self.container.add_bytes(V.INDEX_MEMBER, archive_index.build(members, footer()))
        counts = {
            entity: {"count": count, "points": self.sequence.points.get(entity, 0)}
            for entity, count in self.sequence.counts.items()
        }
        counts.setdefault(V.SPECTRUM, {"count": 0, "points": 0})["points"] += self.centroid_points
        return counts

    def _finish_spectrum_signal(self) -> None:
        """Close the spectrum data member and add the peaks member after it."""
        if self.data is not None:
            self.data.close(self.sequence.key_value(V.SPECTRUM))
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

    def _metadata_files(self, footer_kv: Callable[[], dict[str, str]]) -> list[str]:
        """Write the members after the spectrum signal as files in the staging folder; returns
        their names in archive order. ``footer_kv()``, the file-level metadata, is called once
        the spectrum metadata's rows are written."""
        for state in self.entities.values():
            for spill in state.spills.values():
                spill.close()
        spectra = self.entities[V.SPECTRUM]
        ids = column_values(spectra.spills["spectrum"], "id")
        names = [self._metadata_member(V.SPECTRUM, ids, footer_kv)]
        for entity in (V.WAVELENGTH_SPECTRUM, V.CHROMATOGRAM):
            state = self.entities.get(entity)
            if state is None or self.sequence.counts.get(entity, 0) == 0:
                continue
            extra = footer_kv if entity == V.WAVELENGTH_SPECTRUM else dict
            names.append(self._metadata_member(entity, ids, extra))
            data_kv = self.sequence.key_value(entity, points_only=True)
            if entity == V.CHROMATOGRAM:
                data_kv |= footer_kv()
            state.data.close(data_kv)
            names.append(V.MEMBER_NAMES[(entity, V.DATA_ARRAYS)])
        return names

    def _metadata_member(
        self, entity: str, ids: pa.Array, extra: Callable[[], dict[str, str]]
    ) -> str:
        """The entity's packed metadata member, its rows written before ``extra()``, the
        key-value pairs its footer adds to the counts, is called; returns its name."""
        state = self._state(entity)
        name = V.MEMBER_NAMES[(entity, V.METADATA)]
        first = next(iter(METADATA_TABLES[entity]))
        schema = pa.schema([pa.field(n, t) for n, t in METADATA_TABLES[entity].items()])
        props = metadata_writer_properties(schema, self.spec.options, f"{first}.index")
        with pq.ParquetWriter(str(self.staging.file(name)), schema, **props) as writer:
            for batch in packed_batches(state.spills, ids):
                writer.write_batch(batch)
            writer.add_key_value_metadata({**self.sequence.key_value(entity), **extra()})
        return name

    def abort(self) -> None:
        for member in (self.data, self.peaks):
            if member is not None:
                with contextlib.suppress(Exception):
                    member.abort()
        with contextlib.suppress(Exception):
            self._stack.close()
        for state in self.entities.values():
            if state.data is not None:
                with contextlib.suppress(Exception):
                    state.data.abort()
            for spill in state.spills.values():
                with contextlib.suppress(Exception):
                    spill.close()
