"""Direct reads of the chunk objects of a Zarr v3 array (and writes, in a local folder).

Through zarr-python's codec pipeline one chunk costs about 110 µs to read and 200-400 µs to
write, whatever its size. The Zarr v3 specification fixes what a chunk object is: for the codec
chain the export writes, ``bytes`` (little endian) optionally followed by ``zstd``, it is the
Zstandard data (or the plain bytes) of the chunk's values, stored under the key the
``default`` chunk key encoding gives (``c/<i>``); the export writes one Zstandard frame per
mzPeak chunk, concatenated, which inflates to the chunk's values as one frame would.
:class:`ChunkFiles` reads and writes exactly that and nothing else, with
``zstandard`` contexts kept per thread (numcodecs sets one up per call: 20 µs against 0.4 µs
for a 40-value chunk) and unbuffered file calls; an array
with any other codecs, a sharding or storage transformer, or a data type it does not know
reports ``direct = False`` and its callers go through zarr. The Zarr store stays an ordinary
store: zarr reads what this writes (the tests compare both ways).

Writes are not atomic per chunk: the export writes into a temporary group that no reader
sees and renames it into place when the run is complete.

Reads trust nothing in the store. A single-file run (a ZIP store) or a remote store is read the
same way, object by object through zarr's ``FsspecStore``. Every chunk is bounded by the size
its array declares (its length in the grid times the item size): at most a Zstandard frame's
worth of that is read, a frame is inflated only up to it (one whose header declares another
size is refused before anything is allocated), and a chunk that is missing, garbled or of
another size is a :class:`~mzpeak_dask.errors.ZarrStoreError` naming the array and the chunk,
as is a ``zarr.json`` that is not JSON or lacks what an array needs.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import zstandard

from ..errors import ZarrStoreError
from ..storage.deadline import StorageDeadlineError, deadline
from ..storage.filecache import per_file
from ..storage.urls import is_url
from .locations import describe, open_options

KNOWN_TYPES = {
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
}


# bounds on what a zarr.json may make a reader allocate before any chunk is read: chunks per
# array (a run of 10^6 spectra has some 4 10^7 mzPeak chunks) and bytes per chunk
MAX_CHUNKS = 1 << 26
MAX_CHUNK_BYTES = 1 << 28


def grid_lengths(metadata: dict[str, Any]) -> np.ndarray | None:
    """The chunk lengths of a 1-D array from its ``zarr.json``: a ``regular`` grid, or a
    ``rectilinear`` one with inline chunk shapes (``[size, repeat]`` entries are run-length
    encoded). None for anything else; ValueError (or KeyError, TypeError) for a grid that is
    malformed or does not cover the array's shape."""
    (length,) = metadata["shape"]
    grid = metadata["chunk_grid"]
    config = grid.get("configuration", {})
    if grid.get("name") == "regular":
        (size,) = config["chunk_shape"]
        if not isinstance(size, int) or size < (1 if length else 0):
            raise ValueError(f"chunk shape {size!r}")
        count = -(-length // size) if size else 0
        if count > MAX_CHUNKS:
            raise ValueError(f"{count:,} chunks, more than {MAX_CHUNKS:,}")
        return np.full(count, size, dtype=np.int64)
    if grid.get("name") != "rectilinear" or config.get("kind", "inline") != "inline":
        return None
    (shapes,) = config["chunk_shapes"]
    if isinstance(shapes, int):  # one size for every chunk
        return grid_lengths(
            {
                **metadata,
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [shapes]}},
            }
        )
    out: list[int] = []
    for entry in shapes:
        size, repeat = entry if isinstance(entry, list) else (entry, 1)
        if not isinstance(size, int) or not isinstance(repeat, int) or size < 1 or repeat < 0:
            raise ValueError(f"chunk shape entry {entry!r}")
        if len(out) + repeat > min(length, MAX_CHUNKS):
            raise ValueError(f"more chunks than the shape {length} holds, or {MAX_CHUNKS:,}")
        out += [size] * repeat
    lengths = np.asarray(out, dtype=np.int64)
    if int(lengths.sum()) != length:
        raise ValueError(f"chunks of {int(lengths.sum())} points for the shape {length}")
    return lengths


class ZstdCodec:
    """The ``zstd`` codec of one array, with a compressor and a decompressor per thread
    (``zstandard`` contexts must not be shared between threads)."""

    def __init__(self, level: int, checksum: bool):
        self.level, self.checksum = level, checksum
        self._local = threading.local()

    def _contexts(self) -> tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor]:
        contexts = getattr(self._local, "contexts", None)
        if contexts is None:
            compressor = zstandard.ZstdCompressor(
                level=self.level, write_checksum=self.checksum, write_content_size=True
            )
            contexts = self._local.contexts = (compressor, zstandard.ZstdDecompressor())
        return contexts

    def encode(self, raw: bytes) -> bytes:
        return self._contexts()[0].compress(raw)

    def decode(self, frame: bytes, size: int) -> bytes:
        """The content of ``frame`` (one Zstandard frame, or several concatenated: a chunk the
        export writes holds one per mzPeak chunk), which must be ``size`` bytes: never more
        than that is allocated (ValueError or ``zstandard.ZstdError`` otherwise)."""
        declared = zstandard.frame_content_size(frame)  # of the first frame; -1: not given
        if declared == size:  # decompress allocates exactly that, and fails on more
            return self._contexts()[1].decompress(frame)
        if declared > size:
            raise ValueError(f"declares {declared:,} bytes where its array declares {size:,}")
        parts, have = [], 0
        with self._contexts()[1].stream_reader(frame, read_across_frames=True) as reader:
            while have <= size and (part := reader.read(size + 1 - have)):
                parts.append(part)
                have += len(part)
        if have > size:
            raise ValueError(f"inflates past the {size:,} bytes its array declares")
        return b"".join(parts)


def _codecs(metadata: dict[str, Any], dtype: np.dtype) -> tuple[np.dtype, ZstdCodec | None] | None:
    """The on-disk dtype and the Zstandard codec of a ``bytes`` [+ ``zstd``] chain, else None."""
    codecs = metadata.get("codecs", [])
    if not codecs or codecs[0].get("name") != "bytes" or len(codecs) > 2:
        return None
    endian = codecs[0].get("configuration", {}).get("endian", "little")
    stored = dtype.newbyteorder("<" if endian == "little" else ">")
    if len(codecs) == 1:
        return stored, None
    if codecs[1].get("name") != "zstd":
        return None
    config = codecs[1].get("configuration", {})
    return stored, ZstdCodec(int(config.get("level", 0)), bool(config.get("checksum")))


def _read_file(path: str, limit: int) -> bytes | None:
    """At most ``limit`` bytes of a file (in one system call when it is shorter); None when
    there is no such file."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        data = os.read(fd, min(limit, 1 << 20))  # a bigger limit is not allocated at once
        if len(data) == limit or not data:
            return data
        parts, have = [data], len(data)
        while have < limit and (more := os.read(fd, min(limit - have, 1 << 20))):
            parts.append(more)
            have += len(more)
        return b"".join(parts)
    finally:
        os.close(fd)


def _store(location: str) -> Any:
    """A read-only zarr store of ``location`` (a remote store, a member of a single file)."""
    from zarr.storage import FsspecStore

    return FsspecStore.from_url(location, read_only=True, **open_options(location))


FETCH_CONCURRENCY = 32  # objects of a store in flight at once


def waited(coroutine: Any, where: object) -> Any:
    """The result of ``coroutine``, run on zarr's event loop within the deadline of a call
    to a store (:func:`~..storage.deadline.deadline`): past it the coroutine is cancelled and
    the call fails in one line naming ``where``."""
    from zarr.core.sync import sync

    seconds = deadline()
    try:  # zarr's own timeout too, should the loop itself be stuck
        return sync(asyncio.wait_for(coroutine, seconds), timeout=seconds + 5)
    except TimeoutError:
        said = f"{where}: no answer from the store within {seconds:g} s"
        raise StorageDeadlineError(said) from None


def _read_keys(
    store: Any, keys: list[tuple[str, int]], where: object
) -> list[bytes | None | BaseException]:
    """At most ``limit`` bytes of each object ``key`` of ``store`` (``(key, limit)`` pairs),
    fetched concurrently: None where there is none, the exception where the read failed;
    :func:`waited` for them all (``where`` names the store)."""
    from zarr.abc.store import RangeByteRequest
    from zarr.core.buffer import default_buffer_prototype

    prototype = default_buffer_prototype()

    async def fetch() -> list[Any]:
        slots = asyncio.Semaphore(FETCH_CONCURRENCY)

        async def one(key: str, limit: int) -> bytes | None:
            async with slots:
                found = await store.get(key, prototype, RangeByteRequest(0, limit))
            return None if found is None else found.to_bytes()

        return await asyncio.gather(*(one(*k) for k in keys), return_exceptions=True)

    found = waited(fetch(), where)
    for result in found:  # a damaged object is reported; an interrupt or a bug is not masked
        if isinstance(result, BaseException) and not isinstance(result, READ_ERRORS):
            raise result
    return found


# what reading one object of a store raises when the object (or a ZIP around it) is damaged
READ_ERRORS = (OSError, ValueError, EOFError, zipfile.BadZipFile)


def _fill_value(value: Any, dtype: np.dtype) -> Any:
    """The fill value, None for a hex bit pattern; ValueError for one of another type."""
    if isinstance(value, str):  # "NaN", "Infinity", "-Infinity" or a hex bit pattern
        if dtype.kind != "f":
            raise ValueError(f"fill value {value!r} for {dtype}")
        return {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}.get(value)
    if isinstance(value, bool) and dtype.kind == "b":
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"fill value {value!r}")
    if dtype.kind in "iub":
        info = np.iinfo(dtype) if dtype.kind != "b" else np.iinfo(np.uint8)
        if not isinstance(value, int) or not info.min <= value <= info.max:
            raise ValueError(f"fill value {value!r} for {dtype}")
    return value


# what a Zarr v3 array's zarr.json must hold (the specification's required fields)
REQUIRED = (
    "shape",
    "data_type",
    "chunk_grid",
    "chunk_key_encoding",
    "fill_value",
    "codecs",
)


class ChunkFiles:
    """The chunk objects of one 1-D Zarr v3 array: a folder, or (read only) a location of
    :mod:`.locations` read through zarr's store (a remote store, a member of a single file).

    ``direct`` tells whether this reader handles the array; ``unsupported`` says why not.
    Damage (a ``zarr.json`` that is not JSON or lacks what an array needs, a grid that does not
    cover its shape, a chunk that is missing when ``complete`` is asked, garbled or of the
    wrong size) is a :class:`ZarrStoreError` naming the array (and the chunk)."""

    def __init__(self, path: str | Path):
        self.direct = False
        self.unsupported = ""
        self._store = None
        if is_url(path):
            self.path: str | Path = str(path)
            self._store = _store(self.path)
        else:
            self.path = Path(path)
        self._prefix = ""
        metadata = self._metadata()
        self.metadata = metadata
        name = metadata.get("data_type")
        if (
            metadata.get("zarr_format") != 3
            or metadata.get("node_type") != "array"
            or metadata.get("storage_transformers")
            or not isinstance(name, str)
            or name not in KNOWN_TYPES
        ):
            self.unsupported = f"data type {name!r}, or not a Zarr v3 array without transformers"
            return
        self.dtype = np.dtype(name)
        key_encoding = metadata["chunk_key_encoding"]
        if not isinstance(key_encoding, dict) or key_encoding.get("name") != "default":
            self.unsupported = f"chunk key encoding {key_encoding!r}"
            return
        self.separator = key_encoding.get("configuration", {}).get("separator", "/")
        if self.separator not in ("/", "."):
            raise self._damaged(f"chunk key separator {self.separator!r}")
        self._prefix = f"c{self.separator}"
        if self._store is None:
            self._prefix = os.path.join(str(self.path), self._prefix)
        try:
            lengths = grid_lengths(metadata)
            codecs = _codecs(metadata, self.dtype)
            fill = _fill_value(metadata["fill_value"], self.dtype)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise self._damaged(f"zarr.json: {_reason(exc)}") from None
        if lengths is None or codecs is None or fill is None:
            self.unsupported = "its chunk grid, codecs or fill value"
            return
        if len(lengths) and int(lengths.max()) * self.dtype.itemsize > MAX_CHUNK_BYTES:
            raise self._damaged(f"zarr.json: chunks of more than {MAX_CHUNK_BYTES:,} bytes")
        self.lengths = lengths
        self.length = int(metadata["shape"][0])  # a regular grid's last chunk runs past it
        self.offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        self.stored, self.zstd = codecs
        self.fill = fill
        self.direct = True
        self._made = False

    def __str__(self) -> str:
        return describe(str(self.path))

    def _damaged(self, problem: str, chunk: int | None = None) -> ZarrStoreError:
        at = "" if chunk is None else f" chunk {chunk} ({self._key_name(chunk)})"
        return ZarrStoreError(f"{self}:{at} damaged: {problem}")

    def _metadata(self) -> dict[str, Any]:
        limit = 64 << 20  # a zarr.json is kilobytes; a rectilinear grid of millions of chunks MBs
        if self._store is None:
            raw = _read_file(str(self.path / "zarr.json"), limit)
        else:
            raw = _read_keys(self._store, [("zarr.json", limit)], self)[0]
            if isinstance(raw, BaseException):
                raise self._damaged(f"zarr.json unreadable ({_reason(raw)})")
        if raw is None:
            raise ZarrStoreError(f"{self}: damaged: no array there (zarr.json missing)")
        if len(raw) == limit:
            raise self._damaged(f"zarr.json of {limit:,} bytes or more")
        try:
            metadata = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise self._damaged(f"zarr.json is not JSON ({exc})") from None
        if not isinstance(metadata, dict):
            raise self._damaged("zarr.json is not a JSON object")
        missing = [key for key in REQUIRED if key not in metadata]
        if missing:
            raise self._damaged(f"zarr.json lacks {', '.join(missing)}")
        shape = metadata["shape"]
        if (
            not isinstance(shape, list)
            or len(shape) != 1
            or not isinstance(shape[0], int)
            or isinstance(shape[0], bool)
            or shape[0] < 0
        ):
            raise self._damaged(f"zarr.json: shape {shape!r} is not that of a 1-D array")
        return metadata

    def _key_name(self, i: int) -> str:
        return f"c{getattr(self, 'separator', '/')}{i}"

    def key(self, i: int) -> str:
        """The file (or store key) of chunk ``i``."""
        return f"{self._prefix}{i}"

    def _limit(self, i: int) -> tuple[int, int]:
        """Chunk ``i``'s declared size in bytes, and how many bytes of its object to read: one
        more than it may hold (a Zstandard frame is at most a little longer than its content,
        and a chunk may hold a frame per mzPeak chunk, at most one per value, each with a
        header and checksum of at most 32 bytes)."""
        size = int(self.lengths[i]) * self.dtype.itemsize
        if self.zstd is None:
            return size, size + 1
        return size, size + size // 64 + 256 + 32 * int(self.lengths[i]) + 1

    def _fetch(self, ids: list[int]) -> list[bytes | None | BaseException]:
        """The (bounded) objects of chunks ``ids``: None where there is none, the exception
        where reading failed. A store's objects are fetched concurrently."""
        if self._store is None:
            found: list[bytes | None | BaseException] = []
            for i in ids:
                try:
                    found.append(_read_file(self.key(i), self._limit(i)[1]))
                except OSError as exc:
                    found.append(exc)
            return found
        keys = [(self.key(i), self._limit(i)[1]) for i in ids]
        return _read_keys(self._store, keys, self)

    def _decode(self, i: int, raw: bytes | None | BaseException, complete: bool) -> np.ndarray:
        size, limit = self._limit(i)
        if isinstance(raw, BaseException):
            raise self._damaged(f"unreadable ({_reason(raw)})", i)
        if raw is None:
            if complete:
                raise self._damaged("missing", i)
            return np.full(int(self.lengths[i]), self.fill, dtype=self.dtype)
        if len(raw) >= limit:
            raise self._damaged(f"more than {limit - 1:,} bytes for {size:,} declared", i)
        return self.inflate(raw, size, i)

    def inflate(self, raw: bytes, size: int, chunk: int, what: str = "") -> np.ndarray:
        """The values of ``raw`` (Zstandard frames, or the plain bytes without ``zstd``), which
        must inflate to ``size`` bytes, a size the caller has bounded: never more than that
        is allocated. Anything else is damage to Zarr chunk ``chunk`` (``what`` says which
        part of it, e.g. the frame of one mzPeak chunk)."""
        if self.zstd is not None:
            try:
                raw = self.zstd.decode(raw, size)
            except (ValueError, zstandard.ZstdError) as exc:
                raise self._damaged(f"{what}zstd frame: {_reason(exc)}", chunk) from None
        if len(raw) != size:
            raise self._damaged(f"{what}{len(raw):,} bytes where it declares {size:,}", chunk)
        return np.frombuffer(raw, dtype=self.stored).astype(self.dtype, copy=False)

    def read(self, i: int, complete: bool = False) -> np.ndarray:
        """Chunk ``i``: the fill value where it was never written, unless ``complete`` (every
        chunk was written) makes that damage."""
        return self._decode(i, self._fetch([i])[0], complete)

    def read_many(self, ids: np.ndarray, complete: bool = False) -> np.ndarray:
        """Chunks ``ids`` concatenated."""
        ids = [int(i) for i in ids]
        found = zip(ids, self._fetch(ids), strict=True)
        parts = [self._decode(i, raw, complete) for i, raw in found]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=self.dtype)

    def read_range(self, start: int, stop: int, complete: bool = False) -> np.ndarray | None:
        """Points ``[start, stop)`` when both fall on chunk boundaries, else None."""
        first, last = np.searchsorted(self.offsets, [start, stop])
        if self.offsets[first] != start or last >= len(self.offsets) or self.offsets[last] != stop:
            return None
        return self.read_many(np.arange(first, last), complete)

    def read_span(self, start: int, stop: int, complete: bool = False) -> np.ndarray:
        """Points ``[start, stop)`` (within the shape), from the chunks they fall in."""
        start, stop = max(0, start), min(stop, self.length)
        if stop <= start:
            return np.zeros(0, dtype=self.dtype)
        first = int(np.searchsorted(self.offsets, start, side="right")) - 1
        last = int(np.searchsorted(self.offsets, stop, side="left"))
        values = self.read_many(np.arange(first, last), complete)
        at = int(self.offsets[first])
        return values[start - at : stop - at]

    def take(self, index: np.ndarray, complete: bool = False) -> np.ndarray:
        """Values at sorted point indices (within the shape), reading only their chunks."""
        index = np.asarray(index, dtype=np.int64)
        chunk = np.searchsorted(self.offsets, index, side="right") - 1
        ids = np.unique(chunk)
        values = self.read_many(ids, complete)
        before = np.concatenate(([0], np.cumsum(self.lengths[ids])[:-1])).astype(np.int64)
        return values[index - self.offsets[chunk] + before[np.searchsorted(ids, chunk)]]

    def write(self, first: int, values: np.ndarray) -> None:
        """Write whole chunks ``first, first + 1, ...`` from ``values`` (their concatenation)."""
        if self._store is not None:
            raise ValueError(f"{self}: chunks are written in a local folder only")
        values = np.ascontiguousarray(values, dtype=self.stored)
        if self.separator == "/" and not self._made:
            (self.path / "c").mkdir(exist_ok=True)
            self._made = True
        at, i = 0, first
        while at < len(values):
            n = int(self.lengths[i])
            raw = values[at : at + n].tobytes()
            fd = os.open(self.key(i), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            try:
                os.write(fd, self.zstd.encode(raw) if self.zstd is not None else raw)
            finally:
                os.close(fd)
            at, i = at + n, i + 1
        if at != len(values):
            raise ValueError(f"{self.path}: values end inside chunk {i - 1}")


def _reason(exc: BaseException) -> str:
    """An exception as a few words on one line."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


@per_file(256, marker="zarr.json")
def chunk_files(path: str) -> ChunkFiles:
    """A :class:`ChunkFiles` parsed once per process, reparsed when ``zarr.json`` changes."""
    return ChunkFiles(path)


__all__ = ["ChunkFiles", "chunk_files", "grid_lengths"]
