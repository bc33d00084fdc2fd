"""Footers spliced from the pieces the writing process cut: byte for byte what the generic
decode-shift-encode stitcher writes, on the parts real runs are written as (point and chunked,
several parts, spectra, peaks, UV spectra, chromatograms) and on parts written with and without
page index, statistics, dictionaries and key-value metadata."""

from __future__ import annotations

import io
import pickle
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mzpeak_dask import ConvertOptions
from mzpeak_dask.archive.parquet import data_writer_properties
from mzpeak_dask.archive.parts import write_partition
from mzpeak_dask.encode.contracts import PEAKS
from mzpeak_dask.encode.partition import encode_partition
from mzpeak_dask.encode.plan import plan_run
from mzpeak_dask.parquet_stitch import ThriftError, dumps, read_footer, stitch
from mzpeak_dask.parquet_stitch.splice import Splicer, split_part
from mzpeak_dask.parquet_stitch.stitch import FMD_ROW_GROUPS, RG_ORDINAL
from mzpeak_dask.parquet_stitch.thrift_compact import I16

from ..archive.test_parts import RUNS
from ..helpers.archives import offsets_after

ITEMS = {"profile": 10, "centroid": 4, "uv": 60, "chromatograms": 40}  # several partitions
KV = {"spectrum_array_index": '{"prefix": "x"}', "spectrum_count": "42"}


def _spliced(parts: list, key_value: dict[str, str] | None = KV, splices=None) -> bytes:
    sink = io.BytesIO()
    splicer = Splicer(sink)
    for part, splice in zip(parts, splices or [split_part(p) for p in parts], strict=True):
        splicer.add(part, splice)
    size = splicer.close(key_value)
    assert size == len(sink.getvalue())
    return sink.getvalue()


def _stitched(parts: list, key_value: dict[str, str] | None = KV) -> bytes:
    sink = io.BytesIO()
    stitch(parts, sink, key_value)
    return sink.getvalue()


def _footer(data: bytes) -> bytes:
    (size,) = struct.unpack("<I", data[-8:-4])
    return data[-8 - size : -8]


def _written_parts(kind: str, layout: str, tmp_path) -> dict[str, list]:
    """Each member's parts as workers write them (small partitions), with the pieces the
    writing step cut: {member: [(part, splice)]}."""
    options = ConvertOptions(layout=layout, partition_items=ITEMS[kind], peaks=kind == "profile")
    plan = plan_run(RUNS[kind], tmp_path, options)
    offsets: dict[str, int] = {}
    members: dict[str, list] = {}
    for partition in plan.partitions:
        encoded = encode_partition(partition, plan.spec)
        written = write_partition(encoded, offsets, plan.spec)
        offsets = offsets_after(offsets, encoded.counts)
        for member, part in [*written.data.items(), (PEAKS, written.peaks)]:
            if part is not None:
                members.setdefault(member, []).append((part, written.splices[member]))
    return members


@pytest.mark.parametrize("layout", ["point", "chunked"])
@pytest.mark.parametrize("kind", list(RUNS))
def test_real_runs_splice_to_the_generic_stitch(tmp_path, kind: str, layout: str) -> None:
    members = _written_parts(kind, layout, tmp_path)
    assert members
    for member, written in members.items():
        parts = [part for part, _ in written]
        # as the splices travel from the worker writing a part to the one finishing the run
        splices = [pickle.loads(pickle.dumps(splice, protocol=5)) for _, splice in written]
        assert splices == [splice for _, splice in written]
        want = _stitched(parts)
        got = _spliced(parts, splices=splices)
        assert _footer(got) == _footer(want), member
        assert got == want, member
        read = pq.ParquetFile(io.BytesIO(got))
        assert read.metadata.num_row_groups == sum(s.row_groups for s in splices)
        assert read.read().num_rows == sum(pq.ParquetFile(p).metadata.num_rows for p in parts)
    several = [written for written in members.values() if len(written) > 1]
    assert several, "small partitions give some member several parts"


def _rows(layout: str = "point") -> pa.Table:
    """Real rows: small.mzML's spectrum data written by the converter."""
    table = pq.read_table(io.BytesIO(_written_once(layout)))
    return table.replace_schema_metadata(None)


_CACHE: dict[str, bytes] = {}


def _written_once(layout: str) -> bytes:
    if layout not in _CACHE:
        options = ConvertOptions(layout=layout)
        plan = plan_run(RUNS["profile"], None, options)
        encoded = encode_partition(plan.partitions[0], plan.spec)
        _CACHE[layout] = write_partition(encoded, {}, plan.spec).data["spectrum"].to_pybytes()
    return _CACHE[layout]


def _parts(table: pa.Table, props: dict, cuts=(1, 3)) -> list[bytes]:
    step = max(1, table.num_rows // 7)
    groups = [table.slice(i, step) for i in range(0, table.num_rows, step)]
    out = []
    for a, b in zip((0, *cuts), (*cuts, len(groups)), strict=True):
        sink = io.BytesIO()
        with pq.ParquetWriter(sink, table.schema, **props) as writer:
            for group in groups[a:b]:
                writer.write_table(group, row_group_size=max(1, group.num_rows))
        out.append(sink.getvalue())
    return out


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"write_page_index": False},
        {"write_page_index": False, "write_statistics": False},
        {"use_dictionary": True, "column_encoding": None},  # dictionary pages
        # uncompressed, and no key-value metadata at all
        {"compression": None, "compression_level": None, "store_schema": False},
    ],
)
@pytest.mark.parametrize("layout", ["point", "chunked"])
def test_writer_properties_splice_to_the_generic_stitch(layout: str, change: dict) -> None:
    table = _rows(layout)
    prefix = table.schema[0].name
    index = f"{prefix}.{table.schema[0].type[0].name}"
    props = data_writer_properties(table.schema, ConvertOptions(layout=layout), index) | change
    if change.get("use_dictionary"):
        props.pop("column_encoding")
    parts = _parts(table, props)
    for key_value in (KV, None):
        want = _stitched(parts, key_value)
        assert _spliced(parts, key_value) == want
    got = pq.ParquetFile(io.BytesIO(_spliced(parts)))
    rows = pa.concat_tables(pq.read_table(io.BytesIO(p)) for p in parts)
    assert got.read().replace_schema_metadata(None).equals(rows.replace_schema_metadata(None))
    assert got.read().num_rows == table.num_rows
    assert got.metadata.metadata[b"spectrum_count"] == b"42"
    has_index = props.get("write_page_index", False)
    chunk = got.metadata.row_group(got.metadata.num_row_groups - 1).column(0)
    assert chunk.has_offset_index == has_index


def test_one_part_and_empty_parts_splice_to_the_generic_stitch() -> None:
    table = _rows()
    props = data_writer_properties(table.schema, ConvertOptions(), "point.spectrum_index")
    whole = _parts(table, props, cuts=())
    assert _spliced(whole) == _stitched(whole)
    empty = _parts(table.slice(0, 0), props, cuts=())
    assert pq.ParquetFile(io.BytesIO(empty[0])).metadata.num_row_groups == 0
    for parts in (empty + empty, empty + whole, whole + empty):
        assert _spliced(parts) == _stitched(parts)
    with pytest.raises(ValueError):
        Splicer(io.BytesIO()).close()


def _with_ordinals(part: bytes) -> bytes:
    """``part`` with ``RowGroup.ordinal`` set as other writers do (pyarrow leaves it out)."""
    footer = read_footer(part)
    for ordinal, group in enumerate(footer.get(FMD_ROW_GROUPS).values):
        group.set(RG_ORDINAL, ordinal, I16)
    raw = dumps(footer)
    return part[: -8 - len(_footer(part))] + raw + struct.pack("<I", len(raw)) + b"PAR1"


def test_row_group_ordinals_are_renumbered_as_the_generic_stitch_does() -> None:
    table = _rows()
    props = data_writer_properties(table.schema, ConvertOptions(), "point.spectrum_index")
    parts = [_with_ordinals(p) for p in _parts(table, props)]
    got = _spliced(parts)
    assert got == _stitched(parts)
    groups = read_footer(got).get(FMD_ROW_GROUPS).values
    assert [g.get(RG_ORDINAL) for g in groups] == list(range(len(groups)))
    assert len(groups) > len(parts)


def test_damaged_parts_raise_thrift_errors() -> None:
    good = _written_once("point")
    with pytest.raises(ThriftError):
        split_part(good[:-4] + b"XXXX")
    (size,) = struct.unpack("<I", good[-8:-4])
    cut = bytearray(good)
    cut[-8 - size + 2 : -8] = b"\xff" * (size - 2)
    with pytest.raises(ThriftError):
        split_part(bytes(cut))
    longer = good[:-8] + struct.pack("<I", len(good)) + b"PAR1"
    with pytest.raises(ThriftError):
        split_part(longer)
