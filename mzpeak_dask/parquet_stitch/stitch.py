"""One Parquet file from parts, by copying their bytes and writing one footer.

The parts are complete Parquet files written with one schema and one set of writer properties
(workers write a partition each). A part's data region — from after its leading ``PAR1`` to the
end of its last column chunk — is copied as it is: pages, their compression and encodings,
dictionary pages. What moves is recorded in the metadata, which is rewritten:

- every absolute offset is shifted by where the part's region lands: ``RowGroup.file_offset``,
  ``ColumnChunk.file_offset`` (0, pyarrow's "unset", stays 0), the data, index and dictionary
  page offsets of ``ColumnMetaData``, and each ``PageLocation.offset`` of the offset index;
- after all regions, the parts' column indexes are written verbatim (they hold no offsets), then
  their offset indexes (re-encoded with the shifted offsets), in row-group then column order,
  which is where pyarrow puts them;
- the footer is the first part's ``FileMetaData`` with every part's row groups (ordinals
  renumbered), the summed row count, and the key-value pairs given at :meth:`Stitcher.close`
  placed before the parts' own (pyarrow writes ``ARROW:schema`` last).

So the stitched file is byte for byte the file pyarrow writes when given the same row groups and
key-value metadata (a test holds it to that). Bloom filters are refused (none are written here).
Only the metadata of each part is kept until :meth:`Stitcher.close`, so memory does not grow
with the data.
"""

from __future__ import annotations

import struct as _struct
from collections.abc import Iterable
from typing import IO

from . import thrift_compact as tc

MAGIC = b"PAR1"
# field ids of parquet.thrift
FMD_NUM_ROWS, FMD_ROW_GROUPS, FMD_KEY_VALUE = 3, 4, 5
RG_COLUMNS, RG_NUM_ROWS, RG_FILE_OFFSET, RG_ORDINAL = 1, 3, 5, 7
CC_FILE_PATH, CC_FILE_OFFSET, CC_META = 1, 2, 3
CC_OFFSET_INDEX, CC_OFFSET_INDEX_LENGTH, CC_COLUMN_INDEX, CC_COLUMN_INDEX_LENGTH = 4, 5, 6, 7
CMD_TOTAL_COMPRESSED, CMD_DATA_PAGE, CMD_INDEX_PAGE, CMD_DICTIONARY_PAGE = 7, 9, 10, 11
CMD_BLOOM_FILTER = 14
OI_PAGE_LOCATIONS, PL_OFFSET = 1, 1
KV_KEY, KV_VALUE = 1, 2


def footer_start(view: memoryview) -> int:
    """Where the footer of the Parquet file in ``view`` begins (it ends 8 bytes before the
    file does, at its length and the closing magic), after checking both magics and the length."""
    if len(view) < 12 or view[:4] != MAGIC or view[-4:] != MAGIC:
        raise tc.ThriftError("not a Parquet file (no PAR1 at both ends)")
    (size,) = _struct.unpack("<I", view[-8:-4])
    if size > len(view) - 12:
        raise tc.ThriftError("Parquet footer longer than the file")
    return len(view) - 8 - size


def read_footer(part: bytes | memoryview) -> tc.Struct:
    """The ``FileMetaData`` of a Parquet file held in memory."""
    view = tc.byte_view(part)
    return tc.loads_exactly(view[footer_start(view) : len(view) - 8])


def _row_groups(footer: tc.Struct) -> list[tc.Struct]:
    groups = footer.get(FMD_ROW_GROUPS)
    return [] if groups is None else groups.values


def data_end(footer: tc.Struct) -> int:
    """Where the column chunks of a file end (4 when it has no row group)."""
    end = 4
    for group in _row_groups(footer):
        for chunk in group.get(RG_COLUMNS).values:
            meta = chunk.get(CC_META)
            start = meta.get(CMD_DICTIONARY_PAGE) or meta.get(CMD_DATA_PAGE)
            end = max(end, start + meta.get(CMD_TOTAL_COMPRESSED))
    return end


def _shift(s: tc.Struct, fid: int, delta: int) -> None:
    value = s.get(fid)
    if value:  # absent, or 0 meaning unset
        s.set(fid, value + delta)


def key_value_list(pairs: dict[str, str]) -> list[tc.Struct]:
    return [
        tc.Struct([[KV_KEY, tc.BINARY, k.encode()], [KV_VALUE, tc.BINARY, v.encode()]])
        for k, v in pairs.items()
    ]


class Stitcher:
    """Writes parts to ``sink`` as they come (:meth:`add`), then the footer (:meth:`close`)."""

    def __init__(self, sink: IO[bytes]):
        self.sink = sink
        sink.write(MAGIC)
        self.position = 4
        self.first: tc.Struct | None = None
        self.row_groups: list[tc.Struct] = []
        self._column_indexes: list[tuple[tc.Struct, bytes]] = []
        self._offset_indexes: list[tuple[tc.Struct, bytes]] = []

    def add(self, part) -> None:
        """Copy the row groups of ``part`` (a whole Parquet file: bytes, a memoryview, a
        ``pyarrow.Buffer``) after those added before."""
        view = tc.byte_view(part)
        footer = read_footer(view)
        end = data_end(footer)
        delta = self.position - 4
        for group in _row_groups(footer):
            self._move(view, group, delta)
        self.sink.write(view[4:end])
        self.position += end - 4
        self.row_groups.extend(_row_groups(footer))
        if self.first is None:
            self.first = footer

    def _move(self, view: memoryview, group: tc.Struct, delta: int) -> None:
        _shift(group, RG_FILE_OFFSET, delta)
        for chunk in group.get(RG_COLUMNS).values:
            if chunk.get(CC_FILE_PATH) is not None:
                raise tc.ThriftError("Parquet part: column chunks in another file")
            _shift(chunk, CC_FILE_OFFSET, delta)
            meta = chunk.get(CC_META)
            if meta.get(CMD_BLOOM_FILTER) is not None:
                raise tc.ThriftError("Parquet part: bloom filters are not stitched")
            for fid in (CMD_DATA_PAGE, CMD_INDEX_PAGE, CMD_DICTIONARY_PAGE):
                _shift(meta, fid, delta)
            at = chunk.get(CC_COLUMN_INDEX)
            if at is not None:
                raw = bytes(view[at : at + chunk.get(CC_COLUMN_INDEX_LENGTH)])
                self._column_indexes.append((chunk, raw))
            at = chunk.get(CC_OFFSET_INDEX)
            if at is not None:
                index = tc.loads_exactly(view[at : at + chunk.get(CC_OFFSET_INDEX_LENGTH)])
                for location in index.get(OI_PAGE_LOCATIONS).values:
                    _shift(location, PL_OFFSET, delta)
                self._offset_indexes.append((chunk, tc.dumps(index)))

    def close(self, key_value: dict[str, str] | None = None) -> int:
        """Write the page index and the footer; returns the size of the file."""
        if self.first is None:
            raise ValueError("no part to stitch")
        for chunk, raw in self._column_indexes:
            chunk.set(CC_COLUMN_INDEX, self.position)
            chunk.set(CC_COLUMN_INDEX_LENGTH, len(raw))
            self._write(raw)
        for chunk, raw in self._offset_indexes:
            chunk.set(CC_OFFSET_INDEX, self.position)
            chunk.set(CC_OFFSET_INDEX_LENGTH, len(raw))
            self._write(raw)
        for ordinal, group in enumerate(self.row_groups):
            if group.get(RG_ORDINAL) is not None:
                group.set(RG_ORDINAL, ordinal)
        footer = self.first
        footer.set(FMD_ROW_GROUPS, tc.List(tc.STRUCT, self.row_groups), tc.LIST)
        footer.set(FMD_NUM_ROWS, sum(g.get(RG_NUM_ROWS) for g in self.row_groups))
        if key_value:
            old = footer.get(FMD_KEY_VALUE)
            items = key_value_list(key_value) + (list(old.values) if old is not None else [])
            footer.set(FMD_KEY_VALUE, tc.List(tc.STRUCT, items), tc.LIST)
        encoded = tc.dumps(footer)
        self._write(encoded + _struct.pack("<I", len(encoded)) + MAGIC)
        return self.position

    def _write(self, data: bytes) -> None:
        self.sink.write(data)
        self.position += len(data)


def stitch(
    parts: Iterable[bytes | memoryview], sink: IO[bytes], key_value: dict[str, str] | None = None
) -> int:
    """Stitch ``parts`` into ``sink``; returns the size written."""
    stitcher = Stitcher(sink)
    for part in parts:
        stitcher.add(part)
    return stitcher.close(key_value)
