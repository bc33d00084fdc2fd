"""The compact-protocol codec and the stitcher, against pyarrow and the reference archives: every
footer and page-index struct of real archives round-trips byte for byte, and parts stitched
together are byte for byte the file pyarrow writes from the same row groups."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mzpeak_dask import ConvertOptions, convert
from mzpeak_dask.archive.parquet import data_writer_properties
from mzpeak_dask.parquet_stitch import Stitcher, ThriftError, dumps, loads, read_footer, stitch
from mzpeak_dask.parquet_stitch.thrift_compact import loads_exactly, loads_spanned

from ..conftest import DATA, INLINE
from ..helpers.real_runs import SMALL_MZML

REFERENCE = sorted(p for p in DATA.rglob("*.mzpeak") if p.is_file())  # ZIPs (parquet-rs)


def _members(archive: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(archive) as z:
        return {n: z.read(n) for n in z.namelist() if n.endswith(".parquet")}


@pytest.fixture(scope="module")
def ours(tmp_path_factory) -> dict[str, Path]:
    """small.mzML converted here in both layouts (pyarrow-written members)."""
    folder = tmp_path_factory.mktemp("stitch")
    out = {}
    for layout in ("point", "chunked"):
        out[layout] = folder / f"small.{layout}.mzpeak"
        convert(SMALL_MZML, out[layout], ConvertOptions(layout=layout), cluster=INLINE)
    return out


def _round_trips(data: bytes) -> int:
    """Assert the footer and every page-index struct of ``data`` re-encode to the same bytes;
    returns how many page-index structs there were."""
    (size,) = struct.unpack("<I", data[-8:-4])
    raw = data[-8 - size : -8]
    footer = loads_exactly(raw)
    assert dumps(footer) == raw
    count = 0
    for group in footer.get(4).values:
        for chunk in group.get(1).values:
            for at_field, length_field in ((4, 5), (6, 7)):
                at = chunk.get(at_field)
                if at is None:
                    continue
                blob = data[at : at + chunk.get(length_field)]
                assert dumps(loads_exactly(blob)) == blob
                count += 1
    return count


def test_reference_archives_round_trip_byte_for_byte() -> None:
    assert len(REFERENCE) >= 5
    structs = sum(_round_trips(b) for a in REFERENCE for b in _members(a).values())
    assert structs > 0


def test_our_archives_round_trip_byte_for_byte(ours) -> None:
    for archive in ours.values():
        members = _members(archive)
        assert "spectra_data.parquet" in members
        assert sum(_round_trips(b) for b in members.values()) > 0


def _write(tables: list[pa.Table], props: dict, kv: dict[str, str] | None = None) -> bytes:
    sink = io.BytesIO()
    writer = pq.ParquetWriter(sink, tables[0].schema, **props)
    for table in tables:
        writer.write_table(table, row_group_size=max(1, table.num_rows))
    if kv:
        writer.add_key_value_metadata(kv)
    writer.close()
    return sink.getvalue()


@pytest.mark.parametrize("layout", ["point", "chunked"])
def test_stitched_parts_equal_a_direct_pyarrow_write(ours, layout) -> None:
    """Real rows cut into row groups, written as parts of one, two and the rest row groups with
    the archive's writer properties, stitched: the same bytes as pyarrow writing all the row
    groups into one file with the same key-value metadata; pyarrow reads it with the same
    table, statistics and page index."""
    data = pq.ParquetFile(io.BytesIO(_members(ours[layout])["spectra_data.parquet"]))
    table = data.read().replace_schema_metadata(None)
    prefix = table.schema[0].name
    index = f"{prefix}.spectrum_index"
    props = data_writer_properties(table.schema, ConvertOptions(layout=layout), index)
    step = max(1, table.num_rows // 7)
    groups = [table.slice(i, step) for i in range(0, table.num_rows, step)]
    assert len(groups) >= 5
    parts = [_write(groups[:1], props), _write(groups[1:3], props), _write(groups[3:], props)]
    kv = {"spectrum_array_index": '{"prefix": "x"}', "spectrum_count": "42"}
    direct = _write(groups, props, kv)
    sink = io.BytesIO()
    size = stitch(parts, sink, kv)
    stitched = sink.getvalue()
    assert size == len(stitched)
    assert stitched == direct
    from_arrow = io.BytesIO()  # parts as workers hand them over: pyarrow buffers (signed bytes)
    stitch([pa.py_buffer(p) for p in parts], from_arrow, kv)
    assert from_arrow.getvalue() == direct
    got, want = pq.ParquetFile(io.BytesIO(stitched)), pq.ParquetFile(io.BytesIO(direct))
    assert got.read().equals(table)
    assert got.metadata.num_row_groups == len(groups)
    assert got.metadata.metadata[b"spectrum_count"] == b"42"
    for i in range(got.metadata.num_row_groups):
        for j in range(got.metadata.num_columns):
            a, b = got.metadata.row_group(i).column(j), want.metadata.row_group(i).column(j)
            assert a.statistics.equals(b.statistics)
            assert a.has_column_index and a.has_offset_index
            assert a.data_page_offset == b.data_page_offset
    # pages located through the page index: reading row groups one at a time, filtered
    for i in range(got.metadata.num_row_groups):
        assert got.read_row_group(i).equals(groups[i])


def test_parts_without_rows_stitch_to_a_file_without_row_groups() -> None:
    table = pa.table({"x": pa.array([], pa.float64())})
    props = {"write_page_index": True, "compression": "zstd"}
    empty = _write([table], props | {})
    sink = io.BytesIO()
    stitch([empty, empty], sink, {"count": "0"})
    read = pq.ParquetFile(io.BytesIO(sink.getvalue()))
    assert read.metadata.num_rows == 0
    assert read.read().schema == table.schema
    assert read.metadata.metadata[b"count"] == b"0"


def test_damaged_footers_raise_thrift_errors() -> None:
    table = pa.table({"x": pa.array([1.0, 2.0])})
    good = _write([table], {"write_page_index": True})
    with pytest.raises(ThriftError):
        read_footer(good[:-4] + b"XXXX")
    (size,) = struct.unpack("<I", good[-8:-4])
    cut = bytearray(good)
    cut[-8 - size + 2 : -8] = b"\xff" * (size - 2)  # varints that never end, junk types
    with pytest.raises(ThriftError):
        read_footer(bytes(cut))
    with pytest.raises(ThriftError):
        loads(b"\x1c" * 200)  # structs nested deeper than any footer
    with pytest.raises(ValueError):
        Stitcher(io.BytesIO()).close()


@pytest.mark.slow  # some 400 prefixes of a footer, each read two ways
def test_every_truncated_footer_raises_a_thrift_error(ours) -> None:
    """The reader reads past the end of its bytes as a ThriftError, never an IndexError or a
    struct: each prefix of a real footer, read plain and with spans, and from an offset."""
    data = _members(ours["chunked"])["spectra_data.parquet"]
    (size,) = struct.unpack("<I", data[-8:-4])
    start = len(data) - 8 - size
    footer = data[start:-8]
    assert loads_spanned(data[:-8], start).end == len(data) - 8  # whole, it reads
    for cut in range(0, size, max(1, size // 400)):
        with pytest.raises(ThriftError):
            loads_exactly(footer[:cut])
        with pytest.raises(ThriftError):
            loads_spanned(data[: start + cut], start)
    with pytest.raises(ThriftError):
        loads(footer, size + 1)  # an offset past the end
