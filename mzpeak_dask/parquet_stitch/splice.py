"""Stitching with the footer work done where each part is written.

:class:`~.stitch.Stitcher` decodes every part's footer and offset indexes, shifts their offsets
and encodes them again, in the one process that writes the stitched file. Here the process that
writes a part does the decoding instead, once (:func:`split_part`): it returns a
:class:`PartSplice`, the part's Thrift bytes cut around every field the stitching rewrites, with
the part's own values in the holes. :class:`Splicer` then writes the same file as the stitcher
by copying the parts' data regions, joining those pieces and encoding a varint for each hole.

That is exact because a compact-protocol field header holds the field id's delta and the wire
type, never the value's length: a varint that grows or shrinks moves the bytes after it and
changes nothing else. The holes are the fields holding absolute file offsets —
``RowGroup.file_offset``, ``ColumnChunk.file_offset``, ``ColumnMetaData``'s data, index and
dictionary page offsets, ``PageLocation.offset`` (each shifted by where the part's region lands;
0, pyarrow's "unset", is not a hole and stays 0) — the row groups' ordinals, and the positions
and lengths of the page index, which the splicer lays out as the stitcher does (column indexes
verbatim, then the offset indexes, in row-group then column order). The ``FileMetaData``
around the row groups keeps its fields as the first part wrote them, with the summed row count
and the key-value pairs given at :meth:`Splicer.close` first. A test holds the result to the
stitcher's, byte for byte.
"""

from __future__ import annotations

import itertools
import struct as _struct
from dataclasses import dataclass
from typing import IO

from . import thrift_compact as tc
from .stitch import (
    CC_COLUMN_INDEX,
    CC_COLUMN_INDEX_LENGTH,
    CC_FILE_OFFSET,
    CC_FILE_PATH,
    CC_META,
    CC_OFFSET_INDEX,
    CC_OFFSET_INDEX_LENGTH,
    CMD_BLOOM_FILTER,
    CMD_DATA_PAGE,
    CMD_DICTIONARY_PAGE,
    CMD_INDEX_PAGE,
    FMD_KEY_VALUE,
    FMD_NUM_ROWS,
    FMD_ROW_GROUPS,
    MAGIC,
    OI_PAGE_LOCATIONS,
    PL_OFFSET,
    RG_COLUMNS,
    RG_FILE_OFFSET,
    RG_NUM_ROWS,
    RG_ORDINAL,
    data_end,
    footer_start,
    key_value_list,
)

# what a hole holds: (kind, the part's own value or the position of its entry in the part)
SHIFT, ORDINAL, COLUMN_INDEX, OFFSET_INDEX, OFFSET_INDEX_LENGTH = range(5)
_SHIFTED = (CMD_DATA_PAGE, CMD_INDEX_PAGE, CMD_DICTIONARY_PAGE)


@dataclass(frozen=True, slots=True)
class Template:
    """Thrift bytes with holes: ``pieces`` around ``holes`` (one piece more than holes), each
    hole a zigzag varint to be encoded from ``(kind, value)``."""

    pieces: tuple[bytes, ...]
    holes: tuple[tuple[int, int], ...]

    def __reduce__(self) -> tuple:
        """Pickled by its fields in order (a part holds one a column chunk: a slotted
        dataclass's default state, by field name, took twice as long both ways)."""
        return Template, (self.pieces, self.holes)


@dataclass(frozen=True, slots=True)
class PartSplice:
    """A Parquet part's footer and offset indexes, cut for splicing (:func:`split_part`)."""

    data_end: int  # where its column chunks end
    rows: int
    row_groups: int
    groups: Template  # its RowGroup structs, back to back
    column_indexes: tuple[tuple[int, int], ...]  # (position, length) in the part, chunk order
    offset_indexes: tuple[Template, ...]  # chunk order, SHIFT holes only
    fields: tuple[tuple[int, int, bytes], ...]  # FileMetaData: (field id, wire type, value)
    key_value: tuple[bytes, ...]  # the part's KeyValue structs, encoded

    def __reduce__(self) -> tuple:
        """Pickled by its fields in order, as :class:`Template` is."""
        return PartSplice, tuple(getattr(self, f) for f in PartSplice.__slots__)


def _cut(view: memoryview, start: int, end: int, holes: list[tuple[int, int, int, int]]):
    """``view[start:end]`` as a :class:`Template` around ``holes`` ((start, end, kind, value)
    of each hole's bytes, in order)."""
    pieces, kinds = [], []
    at = start
    for begin, stop, kind, value in holes:
        pieces.append(bytes(view[at:begin]))
        kinds.append((kind, value))
        at = stop
    pieces.append(bytes(view[at:end]))
    return Template(tuple(pieces), tuple(kinds))


def _shift_hole(f: list) -> list[tuple[int, int, int, int]]:
    """The hole of an offset field (none when it holds 0, "unset", which stays 0)."""
    return [(f[3], f[4], SHIFT, f[2])] if f[2] else []


class _Splitter:
    def __init__(self, view: memoryview):
        self.view = view
        self.column_indexes: list[tuple[int, int]] = []
        self.offset_indexes: list[Template] = []

    def group(self, group: tc.Spanned, ordinal: int) -> list[tuple[int, int, int, int]]:
        holes = []
        for f in group.fields:
            if f[0] == RG_FILE_OFFSET:
                holes += _shift_hole(f)
            elif f[0] == RG_ORDINAL:
                holes.append((f[3], f[4], ORDINAL, ordinal))
            elif f[0] == RG_COLUMNS:
                for chunk in f[2].values:
                    holes += self.chunk(chunk)
        return holes

    def chunk(self, chunk: tc.Spanned) -> list[tuple[int, int, int, int]]:
        if chunk.get(CC_FILE_PATH) is not None:
            raise tc.ThriftError("Parquet part: column chunks in another file")
        holes = []
        for f in chunk.fields:
            fid = f[0]
            if fid == CC_FILE_OFFSET:
                holes += _shift_hole(f)
            elif fid == CC_META:
                if f[2].get(CMD_BLOOM_FILTER) is not None:
                    raise tc.ThriftError("Parquet part: bloom filters are not stitched")
                for g in f[2].fields:
                    if g[0] in _SHIFTED:
                        holes += _shift_hole(g)
            elif fid == CC_COLUMN_INDEX:
                length = self._length(chunk, CC_COLUMN_INDEX_LENGTH, f[2])
                holes.append((f[3], f[4], COLUMN_INDEX, len(self.column_indexes)))
                self.column_indexes.append((f[2], length))
            elif fid == CC_OFFSET_INDEX:
                length = self._length(chunk, CC_OFFSET_INDEX_LENGTH, f[2])
                holes.append((f[3], f[4], OFFSET_INDEX, len(self.offset_indexes)))
                self.offset_indexes.append(self.offset_index(f[2], length))
            elif fid == CC_OFFSET_INDEX_LENGTH:
                holes.append((f[3], f[4], OFFSET_INDEX_LENGTH, len(self.offset_indexes) - 1))
        return holes

    def _length(self, chunk: tc.Spanned, fid: int, at: int) -> int:
        length = chunk.get(fid)
        if length is None or at < 4 or at + length > len(self.view) - 8:
            raise tc.ThriftError("Parquet part: a page index outside the file")
        return length

    def offset_index(self, at: int, length: int) -> Template:
        index = tc.loads_spanned(self.view[: at + length], at)
        if index.end != at + length:
            raise tc.ThriftError("Parquet part: an offset index of the wrong length")
        holes = []
        for location in index.get(OI_PAGE_LOCATIONS).values:
            for f in location.fields:
                if f[0] == PL_OFFSET:
                    holes += _shift_hole(f)
        return _cut(self.view, at, at + length, holes)


def split_part(part) -> PartSplice:
    """The :class:`PartSplice` of ``part`` (a whole Parquet file: bytes, a memoryview, a
    ``pyarrow.Buffer``), decoded once with the generic codec."""
    view = tc.byte_view(part)
    footer = tc.loads_spanned(view[: len(view) - 8], footer_start(view))
    if footer.end != len(view) - 8:
        raise tc.ThriftError(f"Thrift struct: {len(view) - 8 - footer.end} bytes after its end")
    fields = {f[0]: f for f in footer.fields}
    if FMD_NUM_ROWS not in fields or FMD_ROW_GROUPS not in fields:
        raise tc.ThriftError("Parquet part: a footer without its row count or row groups")
    groups = fields[FMD_ROW_GROUPS][2].values
    splitter = _Splitter(view)
    holes = [h for ordinal, g in enumerate(groups) for h in splitter.group(g, ordinal)]
    start, end = (groups[0].start, groups[-1].end) if groups else (0, 0)
    kv = fields.get(FMD_KEY_VALUE)
    return PartSplice(
        data_end=data_end(footer),
        rows=sum(g.get(RG_NUM_ROWS) for g in groups),
        row_groups=len(groups),
        groups=_cut(view, start, end, holes),
        column_indexes=tuple(splitter.column_indexes),
        offset_indexes=tuple(splitter.offset_indexes),
        fields=tuple((f[0], f[1], bytes(view[f[3] : f[4]])) for f in footer.fields),
        key_value=tuple(bytes(view[i.start : i.end]) for i in kv[2].values) if kv else (),
    )


@dataclass(slots=True)
class _Placed:
    """A part as added: its splice, and where its region and page-index entries went."""

    splice: PartSplice
    delta: int
    ordinal: int
    column_index: int
    offset_index: int


class Splicer:
    """Writes parts to ``sink`` as they come (:meth:`add`, each with its :class:`PartSplice`),
    then the footer (:meth:`close`): the bytes :class:`~.stitch.Stitcher` writes."""

    def __init__(self, sink: IO[bytes]):
        self.sink = sink
        sink.write(MAGIC)
        self.position = 4
        self.parts: list[_Placed] = []
        self.row_groups = 0
        self._column_indexes: list[bytes] = []
        self._offset_indexes: list[bytes] = []

    @property
    def empty(self) -> bool:
        return not self.parts

    def forget_empty_parts(self) -> None:
        """Drop the parts added so far, none of which had a row group (so none wrote a byte:
        the footer is then taken from the next part added)."""
        if self.row_groups:
            raise ValueError("parts with row groups cannot be dropped")
        self.parts.clear()

    def add(self, part, splice: PartSplice) -> None:
        """Copy the row groups of ``part`` (split as ``splice``) after those added before."""
        view = tc.byte_view(part)
        delta = self.position - 4
        placed = _Placed(
            splice, delta, self.row_groups, len(self._column_indexes), len(self._offset_indexes)
        )
        self.sink.write(view[4 : splice.data_end])
        self.position += splice.data_end - 4
        for at, length in splice.column_indexes:
            self._column_indexes.append(bytes(view[at : at + length]))
        for index in splice.offset_indexes:
            self._offset_indexes.append(_fill(index, lambda kind, value: value + delta))
        self.row_groups += splice.row_groups
        self.parts.append(placed)

    def close(self, key_value: dict[str, str] | None = None) -> int:
        """Write the page index and the footer; returns the size of the file."""
        if not self.parts:
            raise ValueError("no part to stitch")
        column_at = self._laid_out(self._column_indexes)
        offset_at = self._laid_out(self._offset_indexes)
        lengths = [len(raw) for raw in self._offset_indexes]
        groups = []
        for placed in self.parts:

            def value(kind: int, v: int, p: _Placed = placed) -> int:
                if kind == SHIFT:
                    return v + p.delta
                if kind == ORDINAL:
                    return v + p.ordinal
                if kind == COLUMN_INDEX:
                    return column_at[v + p.column_index]
                if kind == OFFSET_INDEX:
                    return offset_at[v + p.offset_index]
                return lengths[v + p.offset_index]

            groups.append(_fill(placed.splice.groups, value))
        encoded = self._footer(b"".join(groups), key_value)
        self._write(encoded + _struct.pack("<I", len(encoded)) + MAGIC)
        return self.position

    def _footer(self, groups: bytes, key_value: dict[str, str] | None) -> bytes:
        """The first part's ``FileMetaData`` with every part's row groups, the summed row
        count and ``key_value`` before the part's own pairs."""
        first = self.parts[0].splice
        fields = list(first.fields)
        values = {
            FMD_NUM_ROWS: tc.zigzag(sum(p.splice.rows for p in self.parts)),
            FMD_ROW_GROUPS: tc.list_header(self.row_groups, tc.STRUCT) + groups,
        }
        if key_value:
            items = [tc.dumps(s) for s in key_value_list(key_value)] + list(first.key_value)
            values[FMD_KEY_VALUE] = tc.list_header(len(items), tc.STRUCT) + b"".join(items)
            if all(f[0] != FMD_KEY_VALUE for f in fields):
                fields.append((FMD_KEY_VALUE, tc.LIST, b""))
                fields.sort(key=lambda f: f[0])
        out, last = [], 0
        for fid, wire, raw in fields:
            out += (tc.field_header(last, fid, wire), values.get(fid, raw))
            last = fid
        out.append(b"\0")
        return b"".join(out)

    def _laid_out(self, indexes: list[bytes]) -> list[int]:
        """Write ``indexes`` back to back (in one write: a ZIP member's sink costs a checksum
        call and a system call a write); returns where each begins."""
        at = list(itertools.accumulate((len(raw) for raw in indexes), initial=self.position))
        self._write(b"".join(indexes))
        return at[:-1]

    def _write(self, data: bytes) -> None:
        self.sink.write(data)
        self.position += len(data)


def _fill(template: Template, value) -> bytes:
    """``template`` with each hole's varint encoded from ``value(kind, value)``."""
    pieces = template.pieces
    out = [pieces[0]]
    for (kind, v), piece in zip(template.holes, pieces[1:], strict=True):
        out += (tc.zigzag(value(kind, v)), piece)
    return b"".join(out)


__all__ = ["PartSplice", "Splicer", "Template", "split_part"]
