"""Access to the members of an archive — a stored ZIP or a directory — as zero-copy Arrow
buffers over a memory map.

A ZIP member's data offset is taken from its *local* header (the local extra field can differ
from the central directory's). Buffers are native Arrow memory, never Python file objects:
pyarrow 26 intermittently aborts the interpreter at exit after threaded Parquet reads from
Python file objects.
"""

from __future__ import annotations

import os
import struct
import zipfile
from pathlib import Path

import pyarrow as pa

from .. import vocabulary as V
from ..archive import index as archive_index
from ..errors import ArchiveError

_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")
_LOCAL_SIGNATURE = 0x04034B50


class ArchiveStorage:
    """The members of one archive, by name."""

    remote = False

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.exists():
            raise ArchiveError(f"{self.path}: no such archive")
        self.is_directory = self.path.is_dir()
        if not self.is_directory and not self.path.is_file():  # opening a FIFO would wait
            raise ArchiveError(f"{self.path}: not a regular file, not an archive")
        self._map: pa.MemoryMappedFile | None = None
        self._members: dict[str, tuple[int, int]] = {}
        if self.is_directory:
            self.names = sorted(p.name for p in self.path.iterdir() if p.is_file())
        else:
            self._open_zip()

    def _open_zip(self) -> None:
        try:
            with zipfile.ZipFile(self.path) as z:
                infos = z.infolist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError):
            raise ArchiveError(f"{self.path}: not a ZIP archive (nor a directory)") from None
        self._map = pa.memory_map(os.fsencode(self.path))  # bytes: any file name
        for info in infos:  # a later entry with the same name wins
            self._members[info.filename] = self._locate(info)
        self.names = list(self._members)

    def _locate(self, info: zipfile.ZipInfo) -> tuple[int, int]:
        if info.compress_type != zipfile.ZIP_STORED:
            raise ArchiveError(
                f"{self.path}: member {info.filename} is compressed; mzPeak "
                "members must be stored uncompressed"
            )
        self._map.seek(info.header_offset)
        header = self._map.read(_LOCAL_HEADER.size)
        if len(header) < _LOCAL_HEADER.size or _LOCAL_HEADER.unpack(header)[0] != _LOCAL_SIGNATURE:
            raise ArchiveError(f"{self.path}: corrupt local header of {info.filename}")
        fields = _LOCAL_HEADER.unpack(header)
        name_length, extra_length = fields[-2], fields[-1]
        offset = info.header_offset + _LOCAL_HEADER.size + name_length + extra_length
        if offset + info.file_size > self._map.size():
            raise ArchiveError(f"{self.path}: member {info.filename} runs past the archive's end")
        return offset, info.file_size

    def __contains__(self, name: str) -> bool:
        return name in self.names

    def size(self, name: str) -> int:
        if self.is_directory:
            return (self.path / name).stat().st_size
        return self._members[name][1]

    def buffer(self, name: str) -> pa.Buffer:
        """The member's bytes (zero-copy over the memory map)."""
        if name not in self:
            raise ArchiveError(f"{self.path}: no member {name}")
        if self.is_directory:
            with pa.memory_map(os.fsencode(self.path / name)) as m:
                return m.read_buffer()
        offset, size = self._members[name]
        self._map.seek(offset)
        return self._map.read_buffer(size)

    def source(self, name: str) -> pa.Buffer:
        """What a data member's reader reads: here its whole buffer (a memory map)."""
        return self.buffer(name)

    def index(self) -> tuple[list[archive_index.IndexEntry], dict]:
        """Entries of ``mzpeak_index.json``, or well-known names when it is missing."""
        if V.INDEX_MEMBER in self:
            try:
                return archive_index.parse(self.buffer(V.INDEX_MEMBER).to_pybytes())
            except ValueError as exc:
                detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise ArchiveError(f"{self.path}: unreadable {V.INDEX_MEMBER} ({detail})") from None
        if self.is_directory:
            raise ArchiveError(f"{self.path}: no {V.INDEX_MEMBER} in the archive directory")
        known = {n: k for k, n in V.MEMBER_NAMES.items()}
        return [archive_index.IndexEntry(n, *known[n]) for n in self.names if n in known], {}

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
