"""Reading single mzPeak chunks out of the big Zarr chunks of an exported run.

Each Zarr chunk object of a signal array is the concatenation of one frame per mzPeak chunk
(a Zstandard frame, or the plain bytes with ``compression="none"``); the run's
``chunk_offsets`` and ``chunk_frame_bytes`` say where each frame lies. :class:`Frames` reads
the frames of the mzPeak chunks asked for and nothing else: one read per run of adjacent
frames (``os.pread`` in a folder, a byte-range request through zarr's store for a remote
store or a single-file run), each frame inflated only up to the size its chunk declares.

Nothing read is trusted: the frame table must tile every Zarr chunk exactly (a Zarr chunk
boundary on an mzPeak chunk boundary, frames no bigger than their content allows), an object
must be exactly the size its frames add up to, and a frame must inflate to its chunk's size;
otherwise a ``ZarrStoreError`` names the array and the Zarr chunk.

:data:`READ` counts the bytes of chunk objects read in this process (what the benchmark
reports as bytes read).
"""

from __future__ import annotations

import asyncio
import os
import struct
import threading
import zipfile
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np

from ..errors import ZarrStoreError
from .chunks import READ_ERRORS, ChunkFiles, _reason

FETCH_CONCURRENCY = 32  # byte ranges of a store in flight at once


class ReadCounter:
    """Bytes of chunk objects read in this process."""

    def __init__(self) -> None:
        self.bytes = 0
        self._lock = threading.Lock()

    def add(self, n: int) -> None:
        with self._lock:
            self.bytes += n


READ = ReadCounter()


class Frames:
    """Where each mzPeak chunk of one signal array lies in its Zarr chunk objects."""

    def __init__(self, files: ChunkFiles, chunk_offsets: np.ndarray, frame_bytes: np.ndarray):
        self.files = files
        offsets = np.asarray(chunk_offsets, dtype=np.int64)
        frame_bytes = np.asarray(frame_bytes, dtype=np.int64)
        n = len(offsets) - 1
        if n < 0 or len(frame_bytes) != n or offsets[-1] != files.length:
            raise files._damaged(f"{n:,} frames do not cover its {files.length:,} points")
        lengths = np.diff(offsets)
        if n and (lengths.min() < 1 or offsets[0] != 0):
            raise files._damaged("mzPeak chunk offsets that are not increasing from 0")
        self.sizes = lengths * files.dtype.itemsize  # inflated bytes of each frame
        bound = self.sizes if files.zstd is None else self.sizes + self.sizes // 64 + 256
        if n and (frame_bytes.min() < 1 or np.any(frame_bytes > bound)):
            raise files._damaged("frame sizes its chunk lengths cannot have")
        zarr_offsets = files.offsets[: len(files.lengths) + 1] if files.length else np.zeros(1)
        first = np.searchsorted(offsets, zarr_offsets)
        if np.any(first > n) or not np.array_equal(offsets[first], zarr_offsets):
            raise files._damaged("a Zarr chunk boundary inside an mzPeak chunk")
        self.first = first  # the first mzPeak chunk of each Zarr chunk (and n)
        self.zarr_chunk = np.repeat(np.arange(len(first) - 1), np.diff(first))
        ends = np.cumsum(frame_bytes)
        before = np.concatenate(([0], ends))[first]  # frame bytes before each Zarr chunk
        self.object_size = np.diff(before)
        self.byte_start = ends - frame_bytes - before[self.zarr_chunk]
        self.frame_bytes = frame_bytes
        self.offsets = offsets
        self._checked: set[int] = set()

    @property
    def chunks(self) -> int:
        return len(self.frame_bytes)

    def read(self, ids: np.ndarray) -> np.ndarray:
        """mzPeak chunks ``ids`` (sorted, distinct) of the array, concatenated."""
        ids = np.asarray(ids, dtype=np.int64)
        files = self.files
        if not len(ids):
            return np.zeros(0, dtype=files.dtype)
        # runs of adjacent chunks within one Zarr chunk: one read each
        z = self.zarr_chunk[ids]
        cut = np.flatnonzero((np.diff(ids) != 1) | (np.diff(z) != 0)) + 1
        heads, tails = np.r_[0, cut], np.r_[cut, len(ids)]
        spans = [
            (
                int(z[h]),
                int(self.byte_start[ids[h]]),
                int(self.byte_start[ids[t - 1]] + self.frame_bytes[ids[t - 1]]),
            )
            for h, t in zip(heads.tolist(), tails.tolist(), strict=True)
        ]
        found = self._fetch(spans)
        parts = []
        for (zchunk, _, _), raw, h, t in zip(spans, found, heads, tails, strict=True):
            at = 0
            for i in ids[h:t].tolist():
                size = int(self.frame_bytes[i])
                frame = raw[at : at + size]
                parts.append(
                    files.inflate(frame, int(self.sizes[i]), zchunk, f"frame of mzPeak chunk {i}: ")
                )
                at += size
        return np.concatenate(parts)

    def _fetch(self, spans: list[tuple[int, int, int]]) -> list[bytes]:
        """The bytes ``[start, stop)`` of Zarr chunk objects: ``(zarr chunk, start, stop)``."""
        if self.files._store is None:
            out = self._fetch_files(spans)
        elif (members := _local_zip(str(self.files.path))) is not None:
            out = self._fetch_zip(spans, *members)
        else:
            out = self._fetch_store(spans)
        READ.add(sum(len(b) for b in out))
        return out

    def _check_size(self, zchunk: int, size: int | None) -> None:
        files = self.files
        if size is None:
            raise files._damaged("missing", zchunk)
        want = int(self.object_size[zchunk])
        if size > want:
            raise files._damaged(
                f"more than the {want:,} bytes its frames declare ({size:,})", zchunk
            )
        if size < want:
            raise files._damaged(f"{size:,} bytes where its frames declare {want:,}", zchunk)
        self._checked.add(zchunk)

    def _fetch_files(self, spans: list[tuple[int, int, int]]) -> list[bytes]:
        files, out = self.files, []
        fd, at = None, -1
        try:
            for zchunk, start, stop in spans:
                if zchunk != at:
                    if fd is not None:
                        os.close(fd)
                        fd = None
                    try:
                        fd = os.open(files.key(zchunk), os.O_RDONLY)
                    except FileNotFoundError:
                        self._check_size(zchunk, None)
                    at = zchunk
                    if zchunk not in self._checked:
                        self._check_size(zchunk, os.fstat(fd).st_size)
                data = os.pread(fd, stop - start, start)
                if len(data) != stop - start:
                    raise files._damaged("cut short while it was read", zchunk)
                out.append(data)
        except OSError as exc:
            raise files._damaged(f"unreadable ({_reason(exc)})", at) from None
        finally:
            if fd is not None:
                os.close(fd)
        return out

    def _fetch_zip(self, spans: list[tuple[int, int, int]], path: str, prefix: str) -> list[bytes]:
        """Byte ranges of members of a local single-file run, read from the file itself at
        each member's data offset (found in its local header): a stored member is its bytes
        as they are. Through fsspec's ZIP filesystem the ranges are read one at a time;
        measured (bench_zarr_export's run, 30 copies): a narrow XIC on one thread 0.8 s that
        way, 0.13 s this way (warm)."""
        files, out = self.files, []
        try:
            with open(path, "rb") as handle, zipfile.ZipFile(handle) as archive:
                fd, at, base = handle.fileno(), -1, 0
                for zchunk, start, stop in spans:
                    if zchunk != at:
                        at = zchunk
                        try:
                            info = archive.getinfo(prefix + files.key(zchunk))
                        except KeyError:
                            info = None
                        if info is not None and info.compress_type != zipfile.ZIP_STORED:
                            raise files._damaged("a compressed ZIP member", zchunk)
                        if zchunk not in self._checked:
                            self._check_size(zchunk, None if info is None else info.file_size)
                        base = _data_offset(fd, info.header_offset)
                    data = os.pread(fd, stop - start, base + start)
                    if len(data) != stop - start:
                        raise files._damaged("cut short while it was read", zchunk)
                    out.append(data)
        except (OSError, zipfile.BadZipFile, ValueError) as exc:
            raise ZarrStoreError(f"{files}: damaged: not a ZIP file ({_reason(exc)})") from None
        return out

    def _fetch_store(self, spans: list[tuple[int, int, int]]) -> list[bytes]:
        from zarr.abc.store import RangeByteRequest
        from zarr.core.buffer import default_buffer_prototype
        from zarr.core.sync import sync

        files, store = self.files, self.files._store
        prototype = default_buffer_prototype()
        unchecked = sorted({z for z, _, _ in spans} - self._checked)

        async def size(zchunk: int) -> int | None:
            key = files.key(zchunk)
            if not await store.exists(key):
                return None
            return await store.getsize(key)

        async def fetch() -> tuple[list[Any], list[Any]]:
            slots = asyncio.Semaphore(1 if "::" in str(files.path) else FETCH_CONCURRENCY)

            async def one(zchunk: int, start: int, stop: int) -> bytes | None:
                async with slots:
                    found = await store.get(
                        files.key(zchunk), prototype, RangeByteRequest(start, stop)
                    )
                return None if found is None else found.to_bytes()

            sizes = await asyncio.gather(*(size(z) for z in unchecked), return_exceptions=True)
            data = await asyncio.gather(*(one(*s) for s in spans), return_exceptions=True)
            return sizes, data

        sizes, data = sync(fetch())
        for zchunk, got in zip(unchecked, sizes, strict=True):
            _raise_damage(files, zchunk, got)
            self._check_size(zchunk, got)
        for (zchunk, start, stop), got in zip(spans, data, strict=True):
            _raise_damage(files, zchunk, got)
            if got is None:
                raise files._damaged("missing", zchunk)
            if len(got) != stop - start:
                raise files._damaged("cut short while it was read", zchunk)
        return data


def _local_zip(location: str) -> tuple[str, str] | None:
    """``(file, member prefix)`` of a location inside a local single-file run, else None."""
    if "::" not in location:
        return None
    head, tail = location.split("::", 1)
    if not head.startswith("zip://") or not tail.startswith("file://"):
        return None
    inner = head.removeprefix("zip://").strip("/")
    return unquote(urlsplit(tail).path), f"{inner}/" if inner else ""


def _data_offset(fd: int, header: int) -> int:
    """Where a ZIP member's data starts: after its local header, whose name and extra field
    lengths may differ from the central directory's."""
    local = os.pread(fd, 30, header)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise ValueError(f"no local file header at {header}")
    name, extra = struct.unpack("<HH", local[26:30])
    return header + 30 + name + extra


def _raise_damage(files: ChunkFiles, zchunk: int, got: Any) -> None:
    """A read that failed: damage (one line) for a damaged object, else the exception itself."""
    if isinstance(got, READ_ERRORS):
        raise files._damaged(f"unreadable ({_reason(got)})", zchunk) from None
    if isinstance(got, BaseException):
        raise got


__all__ = ["READ", "Frames"]
