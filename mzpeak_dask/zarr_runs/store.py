"""Zarr v3 plumbing of the run groups (written by the export, read by the analysis): variable
("rectilinear") chunk grids, the codec pipeline used for tiny chunks, and a Dask adapter for
rectilinear arrays.

* Rectilinear grids are experimental in zarr >= 3.2 and sit behind the
  ``array.rectilinear_chunks`` flag, needed to create *and* to open such an array in every
  process. Every function here that opens an array sets it first, so a Dask worker that only
  receives a pickled :class:`ChunkAdapter` still works.
* zarr's opt-in ``FusedCodecPipeline`` runs the codec chain synchronously instead of one
  coroutine per chunk (measured 2.4x faster on 10,000 small chunks); it is set only around our
  own ``open`` calls (under a lock: zarr's config is process-global), and
  :func:`enable_rectilinear` sets its thread pool (``codec_pipeline.max_workers``) to 1 when
  the user has not set it (GIL hand-offs cost more than small chunks' work).
* The export's own arrays (``bytes`` + ``zstd`` codecs) are read chunk object by chunk object
  (:mod:`.chunks`), or mzPeak chunk by mzPeak chunk (:mod:`.frames`), each bounded by the size
  its array declares (in a folder, a single file or a remote store); zarr is the fallback for
  other arrays, which the analysis refuses (zarr inflates a chunk whole before checking its
  size).
* dask cannot read rectilinear arrays yet (``from_array`` asks for ``.chunks``, which zarr
  refuses): :class:`ChunkAdapter` exposes only shape, dtype, ndim and ``__getitem__``, and
  :func:`dask_array` hands dask the chunk sizes explicitly (toolchain notes 5.3).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from ..storage.filecache import per_file
from .chunks import ChunkFiles, ZstdCodec, chunk_files
from .locations import open_options

RECTILINEAR = {"array.rectilinear_chunks": True}
FUSED_PIPELINE = "zarr.core.codec_pipeline.FusedCodecPipeline"
# chunk length of the per-chunk and per-spectrum arrays: one chunk (one file) for up to 4 M
# mzPeak chunks, which keeps a run to a few files
TABLE_CHUNK = 1 << 22
TABLE_LEVEL = 3  # Zstandard level of the tables (zarr's ZstdCodec default)
_LOCK = threading.Lock()


def enable_rectilinear() -> None:
    """Allow rectilinear chunk grids in this process (``client.run`` it on workers), and run
    the fused pipeline's per-chunk work in the calling thread unless configured otherwise."""
    zarr.config.set(RECTILINEAR)
    if zarr.config.get("codec_pipeline.max_workers", None) is None:
        zarr.config.set({"codec_pipeline.max_workers": 1})


@contextlib.contextmanager
def _fast_pipeline() -> Iterator[None]:
    enable_rectilinear()
    with _LOCK, zarr.config.set({"codec_pipeline.path": FUSED_PIPELINE}):
        yield


def open_array(path: str | Path, mode: str = "r") -> zarr.Array:
    """Open one array (rectilinear or not) with the fast codec pipeline; ``path`` is a folder
    or a location of :mod:`.locations` (a remote store, a single-file run)."""
    with _fast_pipeline():
        return zarr.open_array(str(path), mode=mode, **open_options(path))


def open_group(location: str | Path, mode: str = "r") -> zarr.Group:
    """Open a group: a folder, or a location of :mod:`.locations`."""
    enable_rectilinear()
    return zarr.open_group(str(location), mode=mode, **open_options(location))


@per_file(64, marker="zarr.json")
def cached_array(path: str) -> zarr.Array:
    """A read-only array opened once per process (opening parses the whole chunk grid),
    reopened when its metadata changed (a run exported again)."""
    return open_array(path, mode="r")


def compressors(compression: str = "zstd", checksum: bool = False) -> tuple[Any, ...] | None:
    """Zstandard (level 3; with ``checksum`` each frame carries one), or None (no compressor;
    an empty tuple would mean zarr's default)."""
    if compression != "zstd":
        return None
    return (zarr.codecs.ZstdCodec(level=3, checksum=checksum),)


def fill_value(dtype: np.dtype) -> Any:
    """NaN for floating arrays (a spectrum without that array), 0 otherwise."""
    return np.nan if np.dtype(dtype).kind == "f" else 0


def create_point_array(
    group: zarr.Group,
    name: str,
    dtype: np.dtype,
    lengths: Sequence[int],
    compression: str = "zstd",
) -> zarr.Array:
    """A 1-D array whose chunks are exactly ``lengths`` (all positive), in order. An empty run
    gets a regular grid: zarr has no empty rectilinear grid. Its Zstandard frames carry
    checksums: a reader of single frames (:mod:`.frames`) checks each one it reads, where a
    whole-object check (a ZIP member's CRC) is not made."""
    total = int(np.sum(lengths)) if len(lengths) else 0
    chunks: Any = ([int(x) for x in lengths],) if total else (1,)
    return group.create_array(
        name,
        shape=(total,),
        dtype=np.dtype(dtype),
        chunks=chunks,
        compressors=compressors(compression, checksum=True),
        fill_value=fill_value(dtype),
        # every chunk is written (and exists), and zarr skips its per-chunk fill-value scan
        config={"write_empty_chunks": True},
    )


def write_table_array(group: zarr.Group, name: str, values: np.ndarray) -> zarr.Array:
    """A small 1-D array with a regular grid, written whole (per-chunk and per-spectrum data)."""
    values = np.ascontiguousarray(values)
    array = group.create_array(
        name,
        shape=values.shape,
        dtype=values.dtype,
        chunks=(max(1, min(len(values), TABLE_CHUNK)),),
        compressors=compressors(),
        fill_value=fill_value(values.dtype),
    )
    if len(values):
        array[:] = values
    return array


def table_groups(counts: Sequence[int]) -> list[int]:
    """How many consecutive blocks of ``counts`` values each table chunk holds: as many as fit
    in ``TABLE_CHUNK`` values, at least one."""
    groups: list[int] = []
    size = 0
    for n in counts:
        if groups and size + n <= TABLE_CHUNK:
            groups[-1] += 1
            size += n
        else:
            groups.append(1)
            size = n
    return groups


def write_framed_table(
    group: zarr.Group, folder: Path, name: str, blocks: Sequence[np.ndarray], dtype: np.dtype
) -> np.ndarray:
    """A 1-D table of the concatenated ``blocks`` (one per Zarr chunk of the signal arrays),
    each block one Zstandard frame (with content size and checksum): consecutive frames are
    concatenated into chunks of up to ``TABLE_CHUNK`` values (a rectilinear grid, so a chunk
    ends where a frame does), written straight into ``folder`` (the group's local folder).
    zarr-python reads each chunk as it reads one frame. Returns the frames' byte sizes."""
    dtype = np.dtype(dtype)
    counts = [len(b) for b in blocks]
    groups = table_groups(counts)
    bounds = np.concatenate(([0], np.cumsum(groups))).astype(np.int64)
    lengths = [int(sum(counts[a:b])) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    create_point_array(group, name, dtype, lengths, "zstd")
    codec = ZstdCodec(TABLE_LEVEL, True)
    files = ChunkFiles(folder / name)
    sizes = np.zeros(len(blocks), dtype=np.int64)
    for g, (a, b) in enumerate(zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)):
        frames = []
        for i in range(a, b):
            raw = np.ascontiguousarray(blocks[i], dtype=dtype.newbyteorder("<")).tobytes()
            frames.append(codec.encode(raw))
            sizes[i] = len(frames[-1])
        key = Path(files.key(g))
        key.parent.mkdir(parents=True, exist_ok=True)
        key.write_bytes(b"".join(frames))
    return sizes


def read_whole(path: str | Path) -> np.ndarray:
    """All values of a 1-D array (chunk objects read directly when possible)."""
    files = chunk_files(path)
    if files.direct:
        return files.read_span(0, files.length)
    return np.asarray(cached_array(path)[:])


def grid(path: str | Path) -> np.ndarray:
    """The chunk lengths of a 1-D array (empty for an empty array)."""
    files = chunk_files(path)
    if files.direct:
        return files.lengths if files.length else np.zeros(0, dtype=np.int64)
    return chunk_lengths(cached_array(path))


def chunk_lengths(array: zarr.Array) -> np.ndarray:
    """The chunk lengths of a 1-D array along its only axis (empty for an empty array)."""
    if array.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(array.read_chunk_sizes[0], dtype=np.int64)


class ChunkAdapter:
    """A picklable, lazily opened view of a 1-D zarr array for ``dask.array.from_array``:
    no ``chunks`` attribute, so dask accepts the chunk sizes it is given. ``complete``: every
    chunk was written, so a missing one is damage rather than fill values."""

    def __init__(
        self, path: str | Path, shape: tuple[int, ...], dtype: np.dtype, complete: bool = False
    ):
        self.path = str(path)
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.ndim = len(self.shape)
        self.complete = complete

    def __getitem__(self, key: Any) -> np.ndarray:
        span = _span(key, self.shape[0])
        if span is not None:
            files = chunk_files(self.path)
            if files.direct:
                values = files.read_range(*span, self.complete)
                return files.read_span(*span, self.complete) if values is None else values
        return np.asarray(cached_array(self.path)[key])

    def read_points(self, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """The point ranges ``[start, start + length)``, concatenated: straight from the chunk
        objects when every range is a whole chunk, else by an orthogonal selection."""
        files = chunk_files(self.path)
        if files.direct and len(starts):
            ids = np.minimum(np.searchsorted(files.offsets, starts), len(files.lengths) - 1)
            if np.array_equal(files.offsets[ids], starts) and np.array_equal(
                files.lengths[ids], lengths
            ):
                return files.read_many(ids, self.complete)
        return self.take(point_index(starts, lengths))

    def take(self, index: np.ndarray) -> np.ndarray:
        """Values at sorted point indices; zarr reads only the chunks they fall in."""
        if len(index) == 0:
            return np.zeros(0, dtype=self.dtype)
        files = chunk_files(self.path)
        if files.direct:
            return files.take(index, self.complete)
        return np.asarray(cached_array(self.path).get_orthogonal_selection(index))

    def __reduce__(self) -> tuple[Any, ...]:
        return (ChunkAdapter, (self.path, self.shape, self.dtype, self.complete))


class SelectionAdapter:
    """The points of a subset of an array's chunks, as one virtual 1-D array read by
    orthogonal selection (only those chunks are touched). It holds chunk bounds, not point
    indices, so it stays small in a Dask graph."""

    def __init__(self, source: ChunkAdapter, starts: np.ndarray, lengths: np.ndarray):
        self.source = source
        self.starts = np.asarray(starts, dtype=np.int64)  # first point of each chunk
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.ends = np.cumsum(self.lengths)  # end of each chunk in the virtual array
        self.shape = (int(self.ends[-1]) if len(self.ends) else 0,)
        self.dtype = source.dtype
        self.ndim = 1

    def __getitem__(self, key: Any) -> np.ndarray:
        key = key[0] if isinstance(key, tuple) else key
        start, stop, step = key.indices(self.shape[0])
        if step != 1:
            raise IndexError("SelectionAdapter supports contiguous slices only")
        first = int(np.searchsorted(self.ends, start, side="right"))
        last = int(np.searchsorted(self.ends, stop, side="left")) + 1
        before = int(self.ends[first - 1]) if first else 0
        if start == before and last <= len(self.ends) and stop == self.ends[last - 1]:
            # whole selected chunks (what the chromatograms ask for)
            return self.source.read_points(self.starts[first:last], self.lengths[first:last])
        index = point_index(self.starts[first:last], self.lengths[first:last])
        return self.source.take(index[start - before : stop - before])


def _span(key: Any, length: int) -> tuple[int, int] | None:
    """``(start, stop)`` of a contiguous 1-D slice key, else None."""
    key = key[0] if isinstance(key, tuple) and len(key) == 1 else key
    if not isinstance(key, slice):
        return None
    start, stop, step = key.indices(length)
    return (start, stop) if step == 1 and stop >= start else None


def point_index(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(start, start + length)`` ranges, without a loop."""
    lengths = np.asarray(lengths, dtype=np.int64)
    before = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    shift = np.repeat(np.asarray(starts, dtype=np.int64) - before, lengths)
    return shift + np.arange(int(lengths.sum()))


def dask_array(adapter: Any, chunks: Sequence[int]) -> Any:
    """``dask.array.from_array`` over an adapter, with explicit (possibly irregular) chunks."""
    import dask.array as da

    lengths = tuple(int(x) for x in chunks) or (0,)
    return da.from_array(adapter, chunks=(lengths,), asarray=True, lock=False, fancy=False)


__all__ = [
    "ChunkAdapter",
    "cached_array",
    "SelectionAdapter",
    "chunk_lengths",
    "create_point_array",
    "dask_array",
    "enable_rectilinear",
    "grid",
    "open_array",
    "open_group",
    "point_index",
    "read_whole",
    "table_groups",
    "write_framed_table",
    "write_table_array",
]
