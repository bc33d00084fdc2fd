"""Random access and chunked scanning of an input's bytes with bounded memory.

Surveying a file touches only what it must: a search reads fixed-size chunks (with an overlap
so a match across a chunk edge is not missed), and point checks read a few bytes with
``pread``. (A memory map would do the same work, but every page it touches counts towards the
process' resident memory — for a 400 MB input that shows up as hundreds of MB of "peak memory".)
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from ..storage.inputs import range_source, read_range
from ..storage.urls import is_url

CHUNK = 8 << 20


class ByteSource:
    """A file (read with ``pread``), an in-memory ``bytes`` object, or an object in storage
    (a URL: read by ranged requests with a read-ahead cache, never downloaded whole)."""

    def __init__(self, path: str | None = None, data: bytes | None = None):
        self.data, self._fd, self._remote = data, None, None
        self.url = path if data is None and is_url(path) else None  # an object in storage
        if self.url is not None:
            self._remote = range_source(path)
            # a search's chunk (and its overlap) within one read-ahead span: one request each
            self.size, self.chunk = self._remote.size, self._remote.read_ahead // 2
            return
        self.chunk = CHUNK
        self._fd = os.open(path, os.O_RDONLY) if data is None else None
        self.size = len(data) if data is not None else os.fstat(self._fd).st_size

    def __len__(self) -> int:
        return self.size

    def read(self, start: int, stop: int) -> bytes:
        start, stop = max(0, start), min(self.size, stop)
        if stop <= start:
            return b""
        if self.data is not None:
            return self.data[start:stop]
        if self._remote is not None:
            return self._remote.read(start, stop - start)
        return os.pread(self._fd, stop - start, start)

    def peek_many(self, spans: list[tuple[int, int]]) -> list[bytes]:
        """A few bytes at each span; for an object in storage, fetched side by side."""
        if self._remote is not None:
            self._remote.prefetch_many(spans)
        return [self.read(a, b) for a, b in spans]

    @property
    def remote(self) -> bool:
        return self._remote is not None

    @property
    def read_ahead(self) -> int:
        """Bytes a read of an object in storage fetches at least."""
        return self._remote.read_ahead if self._remote is not None else 0

    def _chunks(
        self, start: int, stop: int, overlap: int, chunk: int | None = None
    ) -> Iterator[tuple[int, bytes]]:
        position, step = start, chunk or self.chunk
        while position < stop:
            end = min(stop, position + step)
            yield position, self.read(position, min(stop, end + overlap))
            position = end

    def find(self, sub: bytes, start: int = 0, stop: int | None = None) -> int:
        stop = self.size if stop is None else min(stop, self.size)
        for base, chunk in self._chunks(start, stop, len(sub) - 1):
            at = chunk.find(sub)
            if at >= 0 and base + at + len(sub) <= stop:
                return base + at
        return -1

    def starts(self, pattern: re.Pattern, start: int = 0, overlap: int = 64) -> Iterator[int]:
        """Start positions of ``pattern`` matches (patterns shorter than ``overlap``)."""
        seen = -1  # a scan to the end: large chunks (one request each for an object)
        for base, chunk in self._chunks(start, self.size, overlap, CHUNK):
            for m in pattern.finditer(chunk):
                at = base + m.start()
                if at > seen:
                    seen = at
                    yield at

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> ByteSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_bytes(path: str, start: int, stop: int) -> bytes:
    """Bytes ``[start, stop)`` of a file, or of an object in storage (one ranged request)."""
    if is_url(path):
        return read_range(path, start, stop)
    with open(path, "rb") as f:
        return os.pread(f.fileno(), stop - start, start)
