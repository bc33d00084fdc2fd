"""An encoded partition, with its global offsets, -> finished Parquet parts.

A partition's signal rows become a complete Parquet file per data member (row groups cut at
whole items, about ``row_group_points`` points each, the last one ending at the partition's
end; ZSTD, BYTE_STREAM_SPLIT, DELTA index, statistics, page index: the archive's writer
properties). The task that finishes the run stitches the parts of a member in order
(:mod:`mzpeak_dask.parquet_stitch`): it copies their bytes and writes one footer, never decoding
or compressing a page.

**Global indices.** Every row carries its item's global index: a partition is written with
the number of items of each entity before it (its offsets). The plan gives them and the
finishing task writes again a partition written with wrong ones (UV spectra share the
spectra's item range and are numbered apart; see :mod:`mzpeak_dask.parallel.tasks`).
Partitions do not depend on the number of workers, and row groups never span two partitions,
so an archive is byte-identical for any number of workers.
"""

from __future__ import annotations

import struct as _struct
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import layouts
from ..encode.contracts import PEAKS, EncodedPartition, EncodeSpec
from ..format import vocabulary as V
from ..layouts.schema import SignalSchema
from ..options import ConvertOptions
from ..parquet_stitch import thrift_compact as tc
from ..parquet_stitch.splice import split_part
from ..parquet_stitch.stitch import (
    CC_META,
    FMD_ROW_GROUPS,
    MAGIC,
    RG_COLUMNS,
    footer_start,
)
from ..support.arrow_build import repeated
from .parquet import data_writer_properties
from .row_groups import RowGroupWriter

INDEX_FIELDS = {"spectrum": "index", "chromatogram": "index"}  # others: source_index
_SIZE = _struct.Struct("<Q")
CMD_STATISTICS, STATS_NULL_COUNT = 12, 3  # ColumnMetaData.statistics, Statistics.null_count


def rebase(struct: pa.StructArray, name: str, offset: int) -> pa.StructArray:
    """Add ``offset`` to the struct's index field ``name``."""
    if offset == 0 or len(struct) == 0:
        return struct
    position = struct.type.get_field_index(name)
    children = struct.flatten()
    children[position] = pc.add(children[position], repeated(offset, len(struct), pa.uint64()))
    return pa.StructArray.from_arrays(children, fields=list(struct.type))


def _rebase_table(table: pa.Table, prefix: str, name: str, offset: int) -> pa.Table:
    column = table.column(prefix)
    chunks = [rebase(chunk, name, offset) for chunk in column.chunks]
    return pa.table({prefix: pa.chunked_array(chunks, type=column.type)})


def write_part(table: pa.Table, schema: SignalSchema, options: ConvertOptions, offset: int):
    """``table`` (local indices) with its indices shifted by ``offset``, as a Parquet file of
    item-aligned row groups (a ``pyarrow.Buffer``)."""
    layout = layouts.layout_of(options)
    arrow_schema = layouts.table_schema(schema, options)
    index = (layout.PREFIX, schema.index_column)
    props = data_writer_properties(arrow_schema, options, ".".join(index))
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, arrow_schema, **props) as writer:
        rows = RowGroupWriter(writer, index, options.row_group_points, layout.row_weights)
        rows.write(_rebase_table(table, *index, offset))
        rows.close()
    return sink.getvalue()


def empty_part(schema: SignalSchema, options: ConvertOptions) -> pa.Buffer:
    """A Parquet file of the data member's schema holding one row group of zero rows, whose
    column chunks carry statistics (a null count of 0; pyarrow writes none for a chunk without
    a page, and the reference Python reader needs them to see the row group holds no item)."""
    arrow_schema = layouts.table_schema(schema, options)
    index = f"{layouts.layout_of(options).PREFIX}.{schema.index_column}"
    props = data_writer_properties(arrow_schema, options, index)
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, arrow_schema, **props) as writer:
        # one row group, of no rows (Schema.empty_table imports pandas: the finishing task of
        # bench_single_run's cold 103 MB conversion took 0.35 s with it, 0.16 s without)
        writer.write_table(pa.Table.from_batches([], schema=arrow_schema))
    written = sink.getvalue().to_pybytes()
    start = footer_start(memoryview(written))
    footer = tc.loads_exactly(written[start:-8])
    for group in footer.get(FMD_ROW_GROUPS).values:
        for chunk in group.get(RG_COLUMNS).values:
            chunk.get(CC_META).set(
                CMD_STATISTICS, tc.Struct([[STATS_NULL_COUNT, tc.I64, 0]]), tc.STRUCT
            )
    encoded = tc.dumps(footer)
    return pa.py_buffer(written[:start] + encoded + _struct.pack("<I", len(encoded)) + MAGIC)


def pack_rows(struct: pa.StructArray) -> pa.Buffer:
    """Metadata rows as a partition's file holds them for the task that finishes the run: an
    Arrow IPC stream compressed whole with ZSTD, after its size (8 bytes, little-endian). The
    nested metadata structs are mostly nulls and repeats, 5-20x smaller so; compressing the
    stream in one piece rather than each of its many small buffers (IPC's own compression)
    makes it smaller still and packs and unpacks about ten times faster."""
    sink = pa.BufferOutputStream()
    batch = pa.record_batch([struct], names=["rows"])
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    stream = sink.getvalue()
    return pa.py_buffer(_SIZE.pack(stream.size) + pa.compress(stream, "zstd", asbytes=True))


def unpack_rows(packed: pa.Buffer) -> pa.StructArray:
    """The rows :func:`pack_rows` packed."""
    (size,) = _SIZE.unpack_from(packed)
    stream = pa.decompress(packed.slice(_SIZE.size), size, "zstd")
    return pa.ipc.open_stream(stream).read_all().column(0).combine_chunks()


def write_partition(
    part: EncodedPartition, offsets: dict[str, int], spec: EncodeSpec
) -> EncodedPartition:
    """``part`` with its data and peak tables as Parquet parts, each with its footer cut for
    splicing (:func:`~mzpeak_dask.parquet_stitch.splice.split_part`: the finishing task joins
    those pieces instead of decoding the footers), and its metadata rows rebased and packed
    (:func:`pack_rows`)."""
    data, metadata = {}, {}
    for entity, table in part.data.items():
        offset = offsets.get(entity, 0)
        data[entity] = write_part(table, spec.schemas[entity], spec.options, offset)
        rebased = {
            name: rebase(struct, INDEX_FIELDS.get(name, "source_index"), offset)
            for name, struct in part.metadata.get(entity, {}).items()
        }
        metadata[entity] = {n: pack_rows(r) for n, r in rebased.items()}
    peaks = part.peaks
    if peaks is not None:
        options = replace(spec.options, layout="point", numpress_intensity=None)  # always points
        peaks = write_part(peaks, spec.schemas[PEAKS], options, offsets.get(V.SPECTRUM, 0))
    splices = {member: split_part(written) for member, written in data.items()}
    if peaks is not None:
        splices[PEAKS] = split_part(peaks)
    return replace(
        part, data=data, peaks=peaks, metadata=metadata, offsets=dict(offsets), splices=splices
    )


__all__ = [
    "INDEX_FIELDS",
    "pack_rows",
    "rebase",
    "unpack_rows",
    "write_part",
    "write_partition",
]
