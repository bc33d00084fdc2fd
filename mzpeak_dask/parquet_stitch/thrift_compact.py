"""A generic reader and writer of Thrift's compact protocol, enough to edit Parquet footers.

A Parquet footer (``FileMetaData``) and its page index (``ColumnIndex``, ``OffsetIndex``) are Thrift
structs in the compact protocol (parquet-format's ``parquet.thrift``). This module decodes any such
struct into :class:`Struct` objects that keep *every* field, known or not, in wire order with its
wire type, and encodes them back byte for byte: a caller edits fields by id (shifts a byte offset,
renumbers an ordinal) and never loses what a newer writer added. Values stay as written: doubles
as their 8 raw bytes, booleans inside lists as their raw byte, binaries as bytes.

fastparquet's Thrift classes were considered and rejected: re-serialising a pyarrow footer through
them drops fields, and for a nested schema with BYTE_STREAM_SPLIT and DELTA encodings yields bytes
pyarrow refuses. Nesting is limited (:data:`MAX_DEPTH`) and lengths are checked against the data,
so bytes from a damaged file raise :class:`ThriftError` rather than recursing or allocating.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ArchiveError

# compact-protocol wire types
STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)
MAX_DEPTH = 64  # parquet.thrift nests about 8 deep; a deeper struct is damage


class ThriftError(ArchiveError):
    """Bytes that are not a valid compact-protocol struct."""


@dataclass(slots=True)
class List:
    element_type: int  # wire type of the elements (the raw nibble, kept as written)
    values: list


@dataclass(slots=True)
class Map:
    kinds: int  # key type << 4 | value type, as written (0 for an empty map)
    items: list  # [(key, value)]


@dataclass(slots=True)
class Struct:
    fields: list = field(default_factory=list)  # [field id, wire type, value], in wire order

    def get(self, fid: int, default=None):
        for f in self.fields:
            if f[0] == fid:
                return f[2]
        return default

    def set(self, fid: int, value, wire_type: int | None = None) -> None:
        """Replace field ``fid``'s value, or add it (in field-id order) with ``wire_type``."""
        for f in self.fields:
            if f[0] == fid:
                f[2] = value
                return
        if wire_type is None:
            raise KeyError(f"field {fid} is absent and no wire type was given")
        self.fields.append([fid, wire_type, value])
        self.fields.sort(key=lambda f: f[0])


@dataclass(slots=True)
class Spanned(Struct):
    """A struct read by :func:`loads_spanned`: it knows where its bytes start and end in the
    data, and each of its fields is ``[field id, wire type, value, start, end]``, the last two
    bounding the value's bytes (empty for a boolean field, whose value is its header)."""

    start: int = 0
    end: int = 0


def byte_view(data) -> memoryview:
    """``data`` (bytes, a memoryview, a ``pyarrow.Buffer``: anything with the buffer protocol)
    as unsigned bytes (a pyarrow buffer exports signed ones)."""
    view = memoryview(data)
    return view if view.format == "B" else view.cast("B")


def _reader(spans: bool):
    """A reader of compact-protocol structs (:class:`Spanned` ones when ``spans``): a function
    ``(data, pos, base, depth) -> (struct, position after it)`` over ``bytes``, whose spans are
    positions in ``data`` plus ``base``. A footer has thousands of fields: the integer fields
    (most of them) and nested structs are read in the struct's own loop, and a read past the
    end of ``data`` is the ``IndexError`` its caller turns into :class:`ThriftError`."""

    def read_struct(data: bytes, pos: int, base: int, depth: int):
        if depth > MAX_DEPTH:
            raise ThriftError("Thrift struct: nested too deeply")
        out = Spanned(start=base + pos) if spans else Struct()
        fields = out.fields
        last = 0
        while True:
            header = data[pos]
            pos += 1
            wire = header & 0x0F
            if wire == STOP:
                if spans:
                    out.end = base + pos
                return out, pos
            delta = header >> 4
            if delta:
                fid = last + delta
            else:
                n, pos = read_varint(data, pos)
                fid = (n >> 1) ^ -(n & 1)
            start = pos
            if wire == I32 or wire == I64 or wire == I16:
                b = data[pos]
                if b < 0x80:
                    pos += 1
                    value = (b >> 1) ^ -(b & 1)
                else:
                    n, pos = read_varint(data, pos)
                    value = (n >> 1) ^ -(n & 1)
            elif wire == STRUCT:
                value, pos = read_struct(data, pos, base, depth + 1)
            else:
                value, pos = read_value(data, pos, wire, False, base, depth)
            if spans:
                fields.append([fid, wire, value, base + start, base + pos])
            else:
                fields.append([fid, wire, value])
            last = fid

    def read_value(data: bytes, pos: int, wire: int, in_list: bool, base: int, depth: int):
        if wire == TRUE or wire == FALSE:
            if in_list:
                return data[pos], pos + 1
            return wire == TRUE, pos
        if wire == BYTE:
            return data[pos], pos + 1
        if wire == I16 or wire == I32 or wire == I64:
            n, pos = read_varint(data, pos)
            return (n >> 1) ^ -(n & 1), pos
        if wire == DOUBLE:
            end = pos + 8
            if end > len(data):
                raise ThriftError("Thrift struct: length past the end of data")
            return data[pos:end], end
        if wire == BINARY:
            n, pos = read_varint(data, pos)
            end = pos + n
            if end > len(data):
                raise ThriftError("Thrift struct: length past the end of data")
            return data[pos:end], end
        if wire == LIST or wire == SET:
            header = data[pos]
            pos += 1
            size, element = header >> 4, header & 0x0F
            if size == 15:
                size, pos = read_varint(data, pos)
            if size > len(data) - pos:  # every element takes at least one byte
                raise ThriftError("Thrift struct: container larger than the data")
            values = []
            if element == STRUCT:
                for _ in range(size):
                    value, pos = read_struct(data, pos, base, depth + 1)
                    values.append(value)
            else:
                for _ in range(size):
                    value, pos = read_value(data, pos, element, True, base, depth)
                    values.append(value)
            return List(element, values), pos
        if wire == MAP:
            size, pos = read_varint(data, pos)
            if size > len(data) - pos:
                raise ThriftError("Thrift struct: container larger than the data")
            if not size:
                return Map(0, []), pos
            kinds = data[pos]
            pos += 1
            k, v = kinds >> 4, kinds & 0x0F
            items = []
            for _ in range(size):
                key, pos = read_value(data, pos, k, True, base, depth)
                value, pos = read_value(data, pos, v, True, base, depth)
                items.append((key, value))
            return Map(kinds, items), pos
        if wire == STRUCT:
            return read_struct(data, pos, base, depth + 1)
        raise ThriftError(f"Thrift struct: unknown wire type {wire}")

    return read_struct


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at ``pos`` and the position after it."""
    shift = result = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ThriftError("Thrift struct: varint too long")


_read_struct = _reader(spans=False)
_read_spanned = _reader(spans=True)


def _read(reader, data, pos: int) -> tuple[Struct, int]:
    """``reader``'s struct at ``pos`` of ``data`` (anything with the buffer protocol) and the
    position after it: the bytes from ``pos`` on are copied once (a footer, a page index)."""
    view = byte_view(data)
    if not 0 <= pos <= len(view):
        raise ThriftError("Thrift struct: unexpected end of data")
    try:
        struct, end = reader(bytes(view[pos:]), 0, pos, 1)
    except IndexError:
        raise ThriftError("Thrift struct: unexpected end of data") from None
    return struct, pos + end


def varint(n: int) -> bytes:
    """``n`` (unsigned) as a compact-protocol varint."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def zigzag(n: int) -> bytes:
    """``n`` (a signed integer of up to 64 bits) as a zigzag varint."""
    return varint((n << 1) ^ (n >> 63))


def list_header(size: int, element_type: int) -> bytes:
    """The header of a list of ``size`` elements of wire type ``element_type``."""
    if size < 15:
        return bytes([(size << 4) | element_type])
    return bytes([0xF0 | element_type]) + varint(size)


def field_header(last: int, fid: int, wire: int) -> bytes:
    """The header of field ``fid`` (wire type ``wire``) after field ``last`` of its struct."""
    delta = fid - last
    return bytes([(delta << 4) | wire]) if 0 < delta <= 15 else bytes([wire]) + zigzag(fid)


class _Writer:
    def __init__(self):
        self.out = bytearray()

    def varint(self, n: int) -> None:
        self.out += varint(n)

    def zigzag(self, n: int) -> None:
        self.out += zigzag(n)

    def value(self, wire: int, v, in_list: bool = False) -> None:
        if wire in (TRUE, FALSE):
            if in_list:
                self.out.append(v)
            return  # in a field, the value is the wire type itself
        if wire == BYTE:
            self.out.append(v & 0xFF)
        elif wire in (I16, I32, I64):
            self.zigzag(v)
        elif wire == DOUBLE:
            self.out += v
        elif wire == BINARY:
            self.varint(len(v))
            self.out += v
        elif wire in (LIST, SET):
            self._list(v)
        elif wire == MAP:
            self.varint(len(v.items))
            if v.items:
                self.out.append(v.kinds)
                for key, value in v.items:
                    self.value(v.kinds >> 4, key, True)
                    self.value(v.kinds & 0x0F, value, True)
        elif wire == STRUCT:
            self.struct(v)
        else:
            raise ThriftError(f"Thrift struct: unknown wire type {wire}")

    def _list(self, v: List) -> None:
        self.out += list_header(len(v.values), v.element_type)
        for item in v.values:
            self.value(v.element_type, item, True)

    def struct(self, s: Struct) -> None:
        last = 0
        for fid, wire, v in s.fields:
            if wire in (TRUE, FALSE):
                wire = TRUE if v else FALSE
            self.out += field_header(last, fid, wire)
            self.value(wire, v)
            last = fid
        self.out.append(STOP)


def loads(data: bytes | memoryview, pos: int = 0) -> tuple[Struct, int]:
    """The struct at ``pos`` of ``data`` and the position after it."""
    return _read(_read_struct, data, pos)


def loads_exactly(data: bytes | memoryview) -> Struct:
    """The struct that fills ``data`` exactly."""
    struct, end = loads(data)
    if end != len(data):
        raise ThriftError(f"Thrift struct: {len(data) - end} bytes after its end")
    return struct


def loads_spanned(data: bytes | memoryview, pos: int = 0) -> Spanned:
    """The struct at ``pos`` of ``data``, every struct in it a :class:`Spanned` whose positions
    are those of ``data`` (to cut its bytes around chosen fields)."""
    return _read(_read_spanned, data, pos)[0]


def dumps(s: Struct) -> bytes:
    """``s`` in the compact protocol."""
    writer = _Writer()
    writer.struct(s)
    return bytes(writer.out)


__all__ = [
    "List",
    "Map",
    "Spanned",
    "Struct",
    "ThriftError",
    "byte_view",
    "dumps",
    "field_header",
    "list_header",
    "loads",
    "loads_exactly",
    "loads_spanned",
    "varint",
    "zigzag",
]
