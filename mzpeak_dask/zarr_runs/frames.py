"""Reading single mzPeak chunks out of the big Zarr chunks of an exported run.

Each Zarr chunk object of a signal array is the concatenation of one frame per mzPeak chunk
(a Zstandard frame, or the plain bytes with ``compression="none"``); the run's
``chunk_lengths`` and ``chunk_frame_bytes`` say where each frame lies. Each chunk of a
per-mzPeak-chunk table is likewise one Zstandard frame per Zarr chunk of the signal arrays,
located by ``zarr_chunk_first`` and ``zarr_chunk_table_bytes``. :class:`Frames` reads
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
from .chunks import READ_ERRORS, ChunkFiles, _reason, chunk_files, waited

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
    """Where some frames of one array lie in its Zarr chunk objects, per frame (an *entry*):
    its Zarr chunk, first value and number of values, byte offset in the object and byte
    size; and the size of each object those frames lie in. Built, checked, by :func:`tiled`
    or :func:`over`; ``what`` names an entry in errors ("mzPeak chunk", "Zarr chunk")."""

    def __init__(
        self,
        files: ChunkFiles,
        zarr_chunk: np.ndarray,
        starts: np.ndarray,
        lengths: np.ndarray,
        byte_start: np.ndarray,
        frame_bytes: np.ndarray,
        object_size: dict[int, int],
        what: str = "mzPeak chunk",
        ids: np.ndarray | None = None,
    ):
        self.files = files
        self.zarr_chunk = np.asarray(zarr_chunk, dtype=np.int64)
        self.starts = np.asarray(starts, dtype=np.int64)  # first value of each entry
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.sizes = self.lengths * files.dtype.itemsize  # inflated bytes of each frame
        self.byte_start = np.asarray(byte_start, dtype=np.int64)
        self.frame_bytes = np.asarray(frame_bytes, dtype=np.int64)
        self.object_size = object_size
        self.what = what
        # what each entry is called in errors (its mzPeak chunk or Zarr chunk number)
        self.ids = np.arange(len(self.lengths)) if ids is None else np.asarray(ids, np.int64)
        self._checked: set[int] = set()

    @property
    def chunks(self) -> int:
        return len(self.frame_bytes)

    def subset(self, rows: np.ndarray) -> Frames:
        """The entries ``rows`` (sorted, distinct) only."""
        rows = np.asarray(rows, dtype=np.int64)
        z = self.zarr_chunk[rows]
        return Frames(
            self.files,
            z,
            self.starts[rows],
            self.lengths[rows],
            self.byte_start[rows],
            self.frame_bytes[rows],
            {int(k): self.object_size[int(k)] for k in np.unique(z)},
            self.what,
            self.ids[rows],
        )

    def __reduce__(self) -> tuple:
        return (
            _rebuild,
            (
                str(self.files.path),
                self.zarr_chunk,
                self.starts,
                self.lengths,
                self.byte_start,
                self.frame_bytes,
                self.object_size,
                self.what,
                self.ids,
            ),
        )

    def read(self, rows: np.ndarray) -> np.ndarray:
        """Entries ``rows`` (sorted, distinct) of the array, concatenated."""
        rows = np.asarray(rows, dtype=np.int64)
        files = self.files
        if not len(rows):
            return np.zeros(0, dtype=files.dtype)
        # runs of frames adjacent in one Zarr chunk object: one read each
        z = self.zarr_chunk[rows]
        start, size = self.byte_start[rows], self.frame_bytes[rows]
        apart = start[1:] != start[:-1] + size[:-1]
        cut = np.flatnonzero(apart | (np.diff(z) != 0)) + 1
        heads, tails = np.r_[0, cut], np.r_[cut, len(rows)]
        spans = [
            (int(z[h]), int(start[h]), int(start[t - 1] + size[t - 1]))
            for h, t in zip(heads.tolist(), tails.tolist(), strict=True)
        ]
        found = self._fetch(spans)
        parts = []
        for (zchunk, _, _), raw, h, t in zip(spans, found, heads, tails, strict=True):
            at = 0
            for i in rows[h:t].tolist():
                n = int(self.frame_bytes[i])
                label = f"frame of {self.what} {int(self.ids[i])}: "
                parts.append(files.inflate(raw[at : at + n], int(self.sizes[i]), zchunk, label))
                at += n
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
        want = int(self.object_size[int(zchunk)])
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

        sizes, data = waited(fetch(), files)
        for zchunk, got in zip(unchecked, sizes, strict=True):
            _raise_damage(files, zchunk, got)
            self._check_size(zchunk, got)
        for (zchunk, start, stop), got in zip(spans, data, strict=True):
            _raise_damage(files, zchunk, got)
            if got is None:
                raise files._damaged("missing", zchunk)
            if len(got) > stop - start:  # the whole object: a server that ignores Range
                raise ZarrStoreError(
                    f"{files}: {len(got)} bytes answered for a range of {stop - start} of "
                    f"chunk {zchunk}: the server does not serve byte ranges; serve the store "
                    "from one that does"
                )
            if len(got) != stop - start:
                raise files._damaged("cut short while it was read", zchunk)
        return data


def _rebuild(path: str, *fields: Any) -> Frames:
    return Frames(chunk_files(path), *fields)


def tiled(
    files: ChunkFiles,
    zchunks: np.ndarray,
    counts: np.ndarray,
    lengths: np.ndarray,
    frame_bytes: np.ndarray,
    what: str = "mzPeak chunk",
    ids: np.ndarray | None = None,
) -> Frames:
    """The frames of Zarr chunks ``zchunks`` (sorted, distinct) of ``files``: ``counts[j]``
    frames in the ``j``-th, holding ``lengths`` values and ``frame_bytes`` bytes each (all
    concatenated). The frames must tile each of those Zarr chunks exactly, and be no bigger
    than their content allows: otherwise a ZarrStoreError names the array and the Zarr chunk."""
    zchunks = np.asarray(zchunks, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    frame_bytes = np.asarray(frame_bytes, dtype=np.int64)
    n = len(lengths)
    if len(zchunks) and (zchunks.min() < 0 or zchunks.max() >= len(files.lengths)):
        raise files._damaged(f"frames of Zarr chunks it does not have ({zchunks.max():,})")
    if len(frame_bytes) != n or int(counts.sum()) != n:
        raise files._damaged(f"{n:,} frame lengths for {len(frame_bytes):,} frame sizes")
    for j in np.flatnonzero(counts < 1).tolist():
        raise files._damaged("no frames", int(zchunks[j]))
    if not n:
        return Frames(files, *(np.zeros(0, np.int64),) * 5, {}, what, ids)
    heads = np.cumsum(counts) - counts
    zarr_chunk = np.repeat(zchunks, counts)
    bad = np.flatnonzero(np.minimum.reduceat(lengths, heads) < 1)
    if not len(bad):
        covered = np.add.reduceat(lengths, heads)
        bad = np.flatnonzero(covered != files.lengths[zchunks])
    if len(bad):
        z = int(zchunks[bad[0]])
        raise files._damaged(f"frames that do not tile its {int(files.lengths[z]):,} values", z)
    sizes = lengths * files.dtype.itemsize
    bound = sizes if files.zstd is None else sizes + sizes // 64 + 256
    bad = np.flatnonzero((frame_bytes < 1) | (frame_bytes > bound))
    if len(bad):
        raise files._damaged("frame sizes its lengths cannot have", int(zarr_chunk[bad[0]]))
    ends = np.cumsum(lengths)
    starts = ends - lengths - np.repeat(ends[heads] - lengths[heads], counts)
    starts += files.offsets[zarr_chunk]
    byte_ends = np.cumsum(frame_bytes)
    object_start = byte_ends[heads] - frame_bytes[heads]
    byte_start = byte_ends - frame_bytes - np.repeat(object_start, counts)
    object_size = np.add.reduceat(frame_bytes, heads)
    objects = dict(zip(zchunks.tolist(), object_size.tolist(), strict=True))
    return Frames(files, zarr_chunk, starts, lengths, byte_start, frame_bytes, objects, what, ids)


def over(
    files: ChunkFiles, offsets: np.ndarray, frame_bytes: np.ndarray, what: str = "Zarr chunk"
) -> Frames:
    """The frames of all of ``files``, from their value offsets (frames + 1 values) and byte
    sizes: the frames must tile the whole array (a ZarrStoreError naming it otherwise)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    n = len(offsets) - 1
    if n < 0 or offsets[0] != 0 or offsets[-1] != files.length or np.any(np.diff(offsets) < 1):
        raise files._damaged(f"{max(n, 0):,} frames do not cover its {files.length:,} values")
    if len(frame_bytes) != n:
        raise files._damaged(f"{len(frame_bytes):,} frame sizes for {n:,} frames")
    grid = files.offsets[: len(files.lengths) + 1] if files.length else np.zeros(1, np.int64)
    first = np.searchsorted(offsets, grid)
    if np.any(first > n) or not np.array_equal(offsets[first], grid):
        raise files._damaged("a chunk boundary inside a frame")
    return tiled(
        files, np.arange(len(first) - 1), np.diff(first), np.diff(offsets), frame_bytes, what
    )


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


__all__ = ["READ", "Frames", "over", "tiled"]
