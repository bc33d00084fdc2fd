"""The export's write task, on a worker: decode a range of spectra of an archive (one Zarr chunk
of the run), cut them into mzPeak chunks, and write one chunk object per signal array (one
Zstandard frame per mzPeak chunk) to the run's work location, or hand the objects back where
the worker cannot see it. What it returns (:class:`ChunkResult`) is what the coordinator needs
to give the chunks their keys and write the run's tables (:mod:`.zarr`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ArchiveError
from ..format import vocabulary as V
from ..read.archive import cached_archive
from ..zarr_runs.chunks import ZstdCodec
from ..zarr_runs.store import fill_value
from . import stopping
from .plan import ArraySpec
from .publish import put_object, reported, work_key

ZSTD_LEVEL = 3  # the level the arrays' metadata declare


@dataclass(frozen=True)
class ChunkJob:
    """Spectra ``[start, stop)`` of one run: one Zarr chunk of every signal array, written by
    one worker task under the work keys of task ``task``."""

    source: str
    store: str  # where the run goes, and its name there (what a failure names)
    name: str
    work: str | None  # the run's work location (a folder or a URL prefix); None: returned
    task: int
    arrays: tuple[ArraySpec, ...]
    start: int
    stop: int
    width: float
    compression: str
    flag: str | None = None  # the export's stop flag (see .stopping)


@dataclass
class ChunkResult:
    """What a write task hands back: per mzPeak chunk of its spectra, in order."""

    task: int
    lengths: np.ndarray  # int64 points
    spectrum: np.ndarray  # int64 spectrum index
    chunk_start: np.ndarray  # float64 first and last main-axis values
    chunk_end: np.ndarray
    frames: np.ndarray  # int64 (arrays, chunks): bytes of each frame
    objects: dict[str, bytes] | None = None  # the chunk objects, for the coordinator to write

    @property
    def points(self) -> int:
        return int(self.lengths.sum())


def spectrum_chunks(archive: Any, i: int, width: float) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Spectrum ``i`` as ``open_archive`` decodes it (data member, else peaks member), with the
    point offsets of its non-empty chunks."""
    model = archive.tables_of(V.SPECTRUM).models[i]
    data, peaks = archive.signal(V.SPECTRUM), archive.signal(V.SPECTRUM, V.PEAKS)
    arrays, offsets = {}, np.zeros(1, np.int64)
    if data is not None:
        arrays, offsets = data.read_chunked(i, np.asarray(model) if model else None, width)
    if not arrays and peaks is not None:
        arrays, offsets = peaks.read_chunked(i, None, width)
    if not arrays:
        return {}, np.zeros(1, np.int64)
    return arrays, np.unique(offsets)


def _decode(archive: Any, job: ChunkJob) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """The values of every array over the job's spectra, its chunk lengths and their spectra."""
    parts: dict[str, list[np.ndarray]] = {spec.key: [] for spec in job.arrays}
    lengths, owners = [], []
    for i in range(job.start, job.stop):
        arrays, offsets = spectrum_chunks(archive, i, job.width)
        unknown = set(arrays) - set(parts)
        if unknown:
            raise ArchiveError(f"{job.source}: spectrum {i}: arrays {sorted(unknown)} not listed")
        chunk = np.diff(offsets)
        lengths.append(chunk)
        owners.append(np.full(len(chunk), i, np.int64))
        for spec in job.arrays:
            values = arrays.get(spec.key)
            if values is None:
                values = np.full(int(offsets[-1]), fill_value(spec.dtype), dtype=spec.dtype)
            parts[spec.key].append(values)
    values = {
        spec.name: np.concatenate([np.zeros(0, spec.dtype), *parts[spec.key]]).astype(spec.dtype)
        for spec in job.arrays
    }
    empty = np.zeros(0, np.int64)
    return values, np.concatenate([empty, *lengths]), np.concatenate([empty, *owners])


_CODEC = ZstdCodec(ZSTD_LEVEL, True)  # frames with checksums, as the arrays declare


def encode_frames(
    values: np.ndarray, lengths: np.ndarray, compression: str
) -> tuple[bytes, np.ndarray]:
    """A chunk object: one frame per mzPeak chunk of ``values`` (little endian), and the frame
    sizes."""
    raw = np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("<")).tobytes()
    item = values.dtype.itemsize
    if compression == "none":
        return raw, lengths * item
    view = memoryview(raw)
    bounds = np.concatenate(([0], np.cumsum(lengths))) * item
    frames = [_CODEC.encode(view[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    return b"".join(frames), np.array([len(f) for f in frames], dtype=np.int64)


def write_chunk(job: ChunkJob) -> ChunkResult | None:
    """Decode a range of spectra and write its chunk object of every array (a worker task),
    or return them where the worker cannot see the work folder (``job.work`` None); None,
    having written nothing more, once the export has stopped (it failed)."""
    if stopping.stopped(job.flag):
        return None
    values, lengths, owners = _decode(cached_archive(job.source), job)
    frames = np.zeros((len(job.arrays), len(lengths)), np.int64)
    main, objects = None, None if job.work else {}
    if len(lengths):
        for k, spec in enumerate(job.arrays):
            data, frames[k] = encode_frames(values[spec.name], lengths, job.compression)
            if stopping.stopped(job.flag):
                return None
            if objects is not None:
                objects[work_key(spec.name, job.task)] = data
            else:
                with reported(job.store, [job.name]):
                    put_object(job.work, work_key(spec.name, job.task), data)
            if main is None:
                main = values[spec.name]
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    if main is None:
        bounds = np.zeros(0), np.zeros(0)
    else:
        main = main.astype(np.float64)
        bounds = np.fmin.reduceat(main, starts), np.fmax.reduceat(main, starts)
    return ChunkResult(job.task, lengths, owners, *bounds, frames, objects)


__all__ = [
    "ZSTD_LEVEL",
    "ChunkJob",
    "ChunkResult",
    "encode_frames",
    "spectrum_chunks",
    "write_chunk",
]
