"""The members of an archive in object storage or on a web server, read by byte range.

A stored ZIP keeps every member addressable: opening reads the object's size and its tail (the
central directory, usually in the same request); a metadata member is then one request (its
local header and its bytes together), and a data member is a :class:`RangeSource` whose Parquet
footer and row groups are fetched as they are needed. The directory form lists the prefix and
reads each member object the same way.
"""

from __future__ import annotations

import zipfile
from typing import Any

import pyarrow as pa

from ..errors import ArchiveError, StorageError
from ..storage.failures import cause
from ..storage.ranges import READ_AHEAD, RangeFile, RangeSource, Transfer, fetch
from ..storage.urls import filesystem
from .storage import _LOCAL_HEADER, _LOCAL_SIGNATURE, ArchiveStorage

_HEADER_SLACK = 1024  # bytes read past a local header's fixed part (its name and extra field)


class RemoteArchiveStorage(ArchiveStorage):
    """The members of one remote archive, by name (the interface of ArchiveStorage)."""

    remote = True

    def __init__(self, url: str, options: dict[str, Any] | None = None):
        self.path = url
        self.transfer = Transfer()
        self.fs, self._key = filesystem(url, options)
        info = self._info(self._key)
        self.is_directory = info.get("type") == "directory"
        self._map = None
        self._members: dict[str, tuple[int, int]] = {}
        self._objects: dict[str, str] = {}
        self._sources: dict[str, RangeSource] = {}
        self._located: dict[str, int] = {}
        self._buffers: dict[str, pa.Buffer] = {}  # members read whole (metadata: small)
        self._whole: RangeSource | None = None
        if self.is_directory:
            self._list()
        else:
            self._open_zip(int(info.get("size") or 0))

    def _info(self, key: str) -> dict:
        try:
            self.fs.invalidate_cache(key)  # the object as it is now, not a listing's memory
            info = self.fs.info(key)
        except StorageError:  # the store gave no answer in time (already one line)
            raise
        except Exception as exc:  # every client has its own errors; a user needs one line
            what = cause(exc, "no such archive")
            if what == "no such archive":
                raise ArchiveError(f"{self.path}: {what}") from None
            raise StorageError(f"{self.path}: {what}") from None
        self.transfer.add(0)
        return info

    def _list(self) -> None:
        try:
            entries = self.fs.ls(self._key, detail=True)
        except StorageError:
            raise
        except Exception as exc:
            raise StorageError(f"{self.path}: listing failed ({cause(exc)})") from None
        self.transfer.add(0)
        for entry in entries:
            if entry.get("type") == "file":
                name = entry["name"].rstrip("/").rsplit("/", 1)[-1]
                self._objects[name] = entry["name"]
                self._members[name] = (0, int(entry.get("size") or 0))
        self.names = sorted(self._objects)

    def _open_zip(self, size: int) -> None:
        whole = self._whole = RangeSource(self.fs, self._key, 0, size, self.path, self.transfer)
        whole.prefetch(size - min(size, READ_AHEAD), size)  # the central directory, mostly
        try:
            with zipfile.ZipFile(RangeFile(whole)) as z:
                infos = z.infolist()
        except (zipfile.BadZipFile, OSError, ValueError, EOFError):
            raise ArchiveError(f"{self.path}: not a ZIP archive (nor a directory)") from None
        self._size = size
        for info in infos:
            if info.compress_type != zipfile.ZIP_STORED:
                raise ArchiveError(
                    f"{self.path}: member {info.filename} is compressed; mzPeak "
                    "members must be stored uncompressed"
                )
            self._members[info.filename] = (info.header_offset, info.file_size)
        self.names = list(self._members)

    def size(self, name: str) -> int:
        return self._members[name][1]

    def _header(self, name: str, data: bytes) -> int:
        """The member's data offset, from its local header at the start of ``data``."""
        header_offset, size = self._members[name]
        if len(data) < _LOCAL_HEADER.size or _LOCAL_HEADER.unpack_from(data)[0] != _LOCAL_SIGNATURE:
            raise ArchiveError(f"{self.path}: corrupt local header of {name}")
        fields = _LOCAL_HEADER.unpack_from(data)
        offset = header_offset + _LOCAL_HEADER.size + fields[-2] + fields[-1]
        if offset + size > self._size:
            raise ArchiveError(f"{self.path}: member {name} runs past the archive's end")
        self._located[name] = offset
        return offset

    def buffer(self, name: str) -> pa.Buffer:
        """The member's bytes, in one request (with its local header, in a ZIP)."""
        if name not in self:
            raise ArchiveError(f"{self.path}: no member {name}")
        if name not in self._buffers:
            self._buffers[name] = self._read_whole(name)
        return self._buffers[name]

    def _read_whole(self, name: str) -> pa.Buffer:
        if name in self._sources:
            return self._sources[name].buffer()
        if self.is_directory:
            return pa.py_buffer(self._fetch(self._objects[name], 0, self._members[name][1]))
        header_offset, size = self._members[name]
        stop = min(self._size, header_offset + _LOCAL_HEADER.size + len(name) + size + 512)
        data = self._fetch(self._key, header_offset, stop)
        start = self._header(name, data) - header_offset
        if start + size > len(data):  # a long extra field: read the rest
            end = header_offset + start + size
            data += self._fetch(self._key, header_offset + len(data), end)
        return pa.py_buffer(data[start : start + size])

    def source(self, name: str) -> RangeSource:
        """The member as a range-read source (its local header read once, in a ZIP)."""
        if name not in self:
            raise ArchiveError(f"{self.path}: no member {name}")
        if name not in self._sources:
            size = self._members[name][1]
            where = f"{self.path}: {name}"
            if self.is_directory:
                key, offset = self._objects[name], 0
            else:
                key, offset = self._key, self._located.get(name)
                if offset is None:
                    start = self._members[name][0]
                    stop = min(self._size, start + _LOCAL_HEADER.size + _HEADER_SLACK)
                    offset = self._header(name, self._fetch(key, start, stop))
            self._sources[name] = RangeSource(self.fs, key, offset, size, where, self.transfer)
        return self._sources[name]

    def release(self, name: str, start: int = 0, stop: int | None = None) -> None:
        """Nothing to drop: a remote member's bytes are fetched, not mapped."""

    def _fetch(self, key: str, start: int, stop: int) -> bytes:
        """Bytes of ``key``: from the tail read at opening when it holds them (a small last
        member, such as mzpeak_index.json), else in one request."""
        held = self._whole.cached(start, stop) if self._whole and key == self._key else None
        if held is not None:
            return held
        return fetch(self.fs, key, start, stop, self.path, self.transfer)

    def close(self) -> None:
        self._sources.clear()
        self._buffers.clear()


__all__ = ["RemoteArchiveStorage"]
