"""Access to the members of an archive — a stored ZIP or a directory — as zero-copy Arrow
buffers over a memory map.

A ZIP member's data offset is taken from its *local* header (the local extra field can differ
from the central directory's). Buffers are Arrow buffers over the map (read through Arrow's own
``BufferReader``), never Python file objects: pyarrow 26 intermittently aborts the interpreter
at exit after threaded Parquet reads from Python file objects.

Every page of a map that a read touches counts in the process's resident memory until it is
unmapped, so reading a whole 400 MB member made the reader 400 MB bigger. The map is Python's
``mmap`` (Arrow's has no ``madvise``): :meth:`ArchiveStorage.release` drops the pages of a byte
range once a read is done with them (``MADV_DONTNEED``: the map is read-only and file-backed, so
a later read finds the same bytes again, from the page cache), which bounds the memory of reads
by what one read touches. The ``xic`` command over the 1 GB run of
tests/benchmarks/bench_archive_xic.py peaked at 1,461 MB with the map kept (mapped once per
thread), 330 MB with pages released after each read (and a block read in pieces).
"""

from __future__ import annotations

import mmap
import os
import struct
import zipfile
from pathlib import Path

import pyarrow as pa

from ..archive import index as archive_index
from ..errors import ArchiveError
from ..format import vocabulary as V

_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")
_LOCAL_SIGNATURE = 0x04034B50
_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)  # not on every platform: pages then stay


def _map_file(path: Path) -> mmap.mmap | None:
    """A read-only map of the whole file (None for an empty file, which cannot be mapped)."""
    with open(os.fsencode(path), "rb") as f:  # bytes: any file name
        if os.fstat(f.fileno()).st_size == 0:
            return None
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def _release(m: mmap.mmap | None, start: int, stop: int) -> None:
    """Drop the map's pages that hold bytes ``[start, stop)`` from this process's memory."""
    if m is None or _DONTNEED is None:
        return
    first = start - start % mmap.PAGESIZE  # madvise takes whole pages
    stop = min(stop, len(m))
    if stop > first:
        m.madvise(_DONTNEED, first, stop - first)


def _close(m: mmap.mmap) -> None:
    try:
        m.close()
    except BufferError:  # buffers still in use keep the map until they go
        pass


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
        self._map: mmap.mmap | None = None
        self._view: pa.Buffer | None = None  # the ZIP's map as an Arrow buffer
        self._files: dict[str, mmap.mmap | None] = {}  # a directory's members, mapped
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
        self._map = _map_file(self.path)  # not empty: a ZIP has an end record
        self._view = pa.py_buffer(self._map)
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
        if offset + info.file_size > len(self._map):
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
            if name not in self._files:
                self._files[name] = _map_file(self.path / name)
            m = self._files[name]
            return pa.py_buffer(b"") if m is None else pa.py_buffer(m)
        offset, size = self._members[name]
        return self._view.slice(offset, size)

    def release(self, name: str, start: int = 0, stop: int | None = None) -> None:
        """Drop from this process's memory the mapped pages of bytes ``[start, stop)`` of member
        ``name`` (default: all of it) that reads brought in. Buffers read stay valid."""
        size = self.size(name)
        stop = size if stop is None else min(stop, size)
        if self.is_directory:
            _release(self._files.get(name), start, stop)
        else:
            offset = self._members[name][0]
            _release(self._map, offset + start, offset + stop)

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
        self._view = None
        for m in [self._map, *self._files.values()]:
            if m is not None:
                _close(m)
        self._map = None
        self._files.clear()
