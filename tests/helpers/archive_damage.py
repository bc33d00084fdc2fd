"""Damaging mzPeak archives on purpose: Parquet footers rewritten field by field (a small Thrift
compact-protocol codec), members removed, replaced or cut, the index JSON swapped.

A footer is decoded into nested lists ``[field id, compact type, value]`` (a struct's value is
such a list, a list's value is ``(element type, [values])``), edited, and encoded back.
"""

from __future__ import annotations

import io
import shutil
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

STOP, TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(13)

# field ids (parquet.thrift)
FILE_NUM_ROWS, FILE_ROW_GROUPS, FILE_KEY_VALUES = 3, 4, 5
GROUP_COLUMNS, GROUP_BYTES, GROUP_NUM_ROWS = 1, 2, 3
CHUNK_META = 3
META_NUM_VALUES, META_UNCOMPRESSED, META_COMPRESSED, META_DATA_PAGE = 5, 6, 7, 9


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def byte(self) -> int:
        self.at += 1
        return self.data[self.at - 1]

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return result

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, kind: int):  # noqa: ANN201
        if kind in (TRUE, FALSE):
            return kind == TRUE
        if kind == BYTE:
            return self.byte()
        if kind in (I16, I32, I64):
            return self.zigzag()
        if kind == DOUBLE:
            self.at += 8
            return struct.unpack("<d", self.data[self.at - 8 : self.at])[0]
        if kind == BINARY:
            n = self.varint()
            self.at += n
            return self.data[self.at - n : self.at]
        if kind in (LIST, SET):
            header = self.byte()
            size, element = header >> 4, header & 0x0F
            if size == 15:
                size = self.varint()
            if element in (TRUE, FALSE):
                return element, [self.byte() == TRUE for _ in range(size)]
            return element, [self.value(element) for _ in range(size)]
        if kind == STRUCT:
            return self.fields()
        raise ValueError(f"compact type {kind} not handled")

    def fields(self) -> list:
        out, last = [], 0
        while (header := self.byte()) != STOP:
            delta, kind = header >> 4, header & 0x0F
            field = last + delta if delta else self.zigzag()
            out.append([field, kind, self.value(kind)])
            last = field
        return out


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            return bytes(out + bytes([n]))
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


def _value(kind: int, value) -> bytes:  # noqa: ANN001
    if kind in (TRUE, FALSE):
        return b""
    if kind == BYTE:
        return bytes([value])
    if kind in (I16, I32, I64):
        return _zigzag(value)
    if kind == DOUBLE:
        return struct.pack("<d", value)
    if kind == BINARY:
        return _varint(len(value)) + value
    if kind in (LIST, SET):
        element, items = value
        size = bytes([(min(len(items), 15) << 4) | element])
        head = size + (_varint(len(items)) if len(items) >= 15 else b"")
        if element in (TRUE, FALSE):
            return head + bytes(TRUE if v else FALSE for v in items)
        return head + b"".join(_value(element, v) for v in items)
    if kind == STRUCT:
        return encode(value)
    raise ValueError(f"compact type {kind} not handled")


def encode(fields: list) -> bytes:
    out, last = bytearray(), 0
    for field, kind, value in fields:
        if kind in (TRUE, FALSE):
            kind = TRUE if value else FALSE
        if 0 < field - last <= 15:
            out.append(((field - last) << 4) | kind)
        else:
            out.append(kind)
            out += _zigzag(field)
        out += _value(kind, value)
        last = field
    return bytes(out + bytes([STOP]))


def field(fields: list, number: int) -> list:
    return next(f for f in fields if f[0] == number)


def set_field(fields: list, number: int, value) -> None:  # noqa: ANN001
    field(fields, number)[2] = value


def footer(parquet: bytes) -> list:
    length = struct.unpack("<I", parquet[-8:-4])[0]
    return _Reader(parquet[-8 - length : -8]).fields()


def with_footer(parquet: bytes, fields: list) -> bytes:
    length = struct.unpack("<I", parquet[-8:-4])[0]
    body = encode(fields)
    return parquet[: -8 - length] + body + struct.pack("<I", len(body)) + b"PAR1"


def edit_footer(parquet: bytes, edit: Callable[[list], None]) -> bytes:
    fields = footer(parquet)
    edit(fields)
    return with_footer(parquet, fields)


def row_groups(fields: list) -> list[list]:
    return field(fields, FILE_ROW_GROUPS)[2][1]


def column_meta(fields: list) -> list[list]:
    return [
        field(c, CHUNK_META)[2] for g in row_groups(fields) for c in field(g, GROUP_COLUMNS)[2][1]
    ]


def set_key_value(fields: list, key: bytes, value: bytes) -> None:
    for kv in field(fields, FILE_KEY_VALUES)[2][1]:
        if field(kv, 1)[2] == key:
            set_field(kv, 2, value)
            return
    raise KeyError(key)


# -- archives ---------------------------------------------------------------------------------
def members(archive: Path) -> dict[str, bytes]:
    """The members of a ZIP or directory archive, in order."""
    if archive.is_dir():
        return {p.name: p.read_bytes() for p in sorted(archive.iterdir())}
    with zipfile.ZipFile(archive) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def write_archive(target: Path, content: dict[str, bytes], *, directory: bool = False) -> Path:
    """An archive holding ``content`` (stored ZIP members, or files of a directory)."""
    if target.exists():
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    if directory:
        target.mkdir()
        for name, data in content.items():
            (target / name).write_bytes(data)
        return target
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        for name, data in content.items():
            z.writestr(name, data)
    target.write_bytes(buffer.getvalue())
    return target
