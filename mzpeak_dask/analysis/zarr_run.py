"""One run group of a Zarr export opened for analysis, as lazy Dask arrays.

The per-chunk, per-spectrum and per-Zarr-chunk tables are small and read when the run is
opened. The signal arrays stay on disk: :meth:`ZarrRun.array` is a Dask array over a whole
rectilinear array (one Dask chunk per Zarr chunk by default, through the adapter of toolchain
notes 5.3), and :meth:`ZarrRun.selection` one over a subset of its mzPeak chunks, read frame by
frame out of the Zarr chunks (:mod:`~mzpeak_dask.zarr_runs.frames`). Chromatograms first pick
mzPeak chunks by ``chunk_spectrum_index`` (MS level, RT range) and, for XICs, by
``chunk_start``/``chunk_end`` against the m/z windows; only the frames of those chunks are read,
in batches of whole spectra of about ``BATCH_POINTS`` points (one Dask task each), so a query's
memory is bounded by what it reads, never by the size of the run.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import zarr
from dask import delayed

from ..errors import InputError, ZarrStoreError
from ..filecache import per_file
from ..zarr_runs import (
    CHUNK_OFFSETS,
    FORMAT,
    FRAME_BYTES,
    PER_CHUNK,
    PER_SPECTRUM,
    PER_ZARR_CHUNK,
    TABLES,
)
from ..zarr_runs.chunks import ChunkFiles, chunk_files
from ..zarr_runs.frames import Frames
from ..zarr_runs.locations import child, describe, run_name
from ..zarr_runs.store import (
    ChunkAdapter,
    SelectionAdapter,
    dask_array,
    enable_rectilinear,
    open_group,
    point_index,
)
from .archive_run import POINTS_META, spectra_frame
from .kernels import overlapping, segment_stats, window_sums
from .source import Run, RunSource

BATCH_POINTS = 1 << 20


def _xic_kernel(mz, intensity, segment, lengths, low, high):
    rows, local = np.unique(np.repeat(segment, lengths), return_inverse=True)
    return rows, window_sums(mz, intensity, local, len(rows), low, high)


def _stats_kernel(mz, intensity, segment, lengths):
    rows, local = np.unique(np.repeat(segment, lengths), return_inverse=True)
    return rows, segment_stats(mz, intensity, local, len(rows))


def _frame_kernel(mz, intensity, spectrum, lengths):
    return pd.DataFrame(
        {
            "spectrum_index": np.repeat(spectrum, lengths).astype(np.int64),
            "mz": np.asarray(mz, dtype=np.float64),
            "intensity": np.asarray(intensity, dtype=np.float64),
        }
    )


class ZarrRun(Run):
    """A run group written by :func:`mzpeak_dask.export.zarr.to_zarr`."""

    def __init__(self, path: str | Path):
        enable_rectilinear()
        self.source = str(path)  # a folder, or a location of zarr_runs.locations
        self.name = run_name(self.source)
        self.attrs = dict(_group(self.source).attrs)
        tables = {}
        for name in TABLES:
            files = self._files(name)
            tables[name] = files.read_span(0, files.length)
        mz = self._files("mz")
        self.zarr_lengths, self.point_count = mz.lengths, mz.length
        self.arrays = list(self.attrs.get("arrays", {"mz": None, "intensity": None}))
        self._check(tables)
        self.chunk_offsets = tables[CHUNK_OFFSETS].astype(np.int64)
        self.chunk_lengths = np.diff(self.chunk_offsets)
        self.chunk_spectrum = tables["chunk_spectrum_index"].astype(np.int64)
        self.chunk_start, self.chunk_end = tables["chunk_start"], tables["chunk_end"]
        self.spectrum_offsets = tables["spectrum_offsets"].astype(np.int64)
        self.zarr_chunk_ranges = {name: tables[name] for name in PER_ZARR_CHUNK}
        self.spectra = spectra_frame(tables["time"], tables["ms_level"], tables["precursor_mz"])

    def _at(self, name: str) -> str:
        return child(self.source, name)

    def _files(self, name: str) -> ChunkFiles:
        """Array ``name``'s chunk reader; ZarrStoreError unless it is one the export writes."""
        try:
            files = chunk_files(self._at(name))
        except FileNotFoundError:  # the cache looks at zarr.json first
            raise ZarrStoreError(f"{describe(self._at(name))}: damaged: no array there") from None
        if not files.direct:
            raise ZarrStoreError(
                f"{files}: an array the export does not write ({files.unsupported})"
            )
        return files

    def _check(self, tables: dict[str, np.ndarray]) -> None:
        """The tables agree with each other and with the signal arrays' grid."""
        chunks, points = len(tables[CHUNK_OFFSETS]) - 1, self.point_count
        spectra, zarr_chunks = len(tables["time"]), len(self.zarr_lengths)
        sizes = {name: chunks for name in PER_CHUNK}
        sizes.update({name: spectra for name in PER_SPECTRUM}, spectrum_offsets=spectra + 1)
        sizes.update({name: zarr_chunks for name in PER_ZARR_CHUNK})
        sizes[FRAME_BYTES] = chunks * len(self.arrays)
        for name, size in sizes.items():
            if len(tables[name]) != size:
                raise ZarrStoreError(
                    f"{describe(self._at(name))}: damaged: {len(tables[name]):,} values where "
                    f"the run has {size:,} ({chunks:,} mzPeak chunks, {spectra:,} spectra, "
                    f"{zarr_chunks:,} Zarr chunks of mz)"
                )
        owner, offsets = tables["chunk_spectrum_index"], tables["spectrum_offsets"]
        if chunks and (owner.min() < 0 or owner.max() >= spectra or np.any(np.diff(owner) < 0)):
            raise ZarrStoreError(
                f"{describe(self._at('chunk_spectrum_index'))}: damaged: not the spectra of "
                f"the chunks in order"
            )
        for name, values in (("spectrum_offsets", offsets), (CHUNK_OFFSETS, tables[CHUNK_OFFSETS])):
            if values[0] != 0 or values[-1] != points or np.any(np.diff(values) < 0):
                raise ZarrStoreError(
                    f"{describe(self._at(name))}: damaged: not point offsets over {points:,} points"
                )

    def _adapter(self, name: str) -> ChunkAdapter:
        files = self._files(name)
        if files.length != self.point_count or not np.array_equal(files.lengths, self.zarr_lengths):
            raise ZarrStoreError(f"{files}: damaged: its chunk grid is not that of mz")
        # every chunk of a signal array is written: a missing one is damage
        return ChunkAdapter(files.path, (files.length,), files.dtype, complete=True)

    def frames(self, name: str) -> Frames:
        """Where the mzPeak chunks of signal array ``name`` lie in its Zarr chunks."""
        self._adapter(name)  # the grid is that of mz
        return run_frames(self._at(name), self.source, self.arrays.index(name))

    def array(self, name: str, chunks: np.ndarray | None = None):
        """A Dask array over a whole signal array; its chunks are the Zarr chunks unless
        ``chunks`` cuts it otherwise."""
        return dask_array(self._adapter(name), self.zarr_lengths if chunks is None else chunks)

    def selection(self, name: str, chunk_ids: np.ndarray, batches: list[np.ndarray] | None = None):
        """A Dask array of the points of mzPeak chunks ``chunk_ids`` (sorted), concatenated; one
        Dask chunk per batch of chunk ids (default: one per mzPeak chunk)."""
        self.frames(name)  # checked here, in one line, rather than in a task
        chunk_ids = np.asarray(chunk_ids, dtype=np.int64)
        starts, lengths = self.chunk_offsets[chunk_ids], self.chunk_lengths[chunk_ids]
        if batches is None:
            sizes = self.chunk_lengths[chunk_ids]
        else:
            sizes = np.array([self.chunk_lengths[b].sum() for b in batches], dtype=np.int64)
        source = FrameSource(self._at(name), self.source, self.arrays.index(name))
        return dask_array(SelectionAdapter(source, starts, lengths), sizes)

    def _batches(self, chunk_ids: np.ndarray) -> list[np.ndarray]:
        """Chunk ids cut into batches of whole spectra, about ``BATCH_POINTS`` points each."""
        if not len(chunk_ids):
            return []
        ends = np.cumsum(self.chunk_lengths[chunk_ids])
        spectrum = self.chunk_spectrum[chunk_ids]
        change = np.flatnonzero(np.diff(spectrum)) + 1  # where a new spectrum starts
        wanted = np.arange(BATCH_POINTS, ends[-1], BATCH_POINTS)
        at = np.searchsorted(ends[change - 1], wanted, side="left")
        cuts = np.unique(change[at[at < len(change)]])
        return np.split(chunk_ids, cuts)

    def _parts(self, chunk_ids: np.ndarray, segment: np.ndarray, kernel: Callable, *args) -> list:
        batches = self._batches(chunk_ids)
        if not batches:
            return []
        mz = self.selection("mz", chunk_ids, batches).to_delayed().ravel()
        intensity = self.selection("intensity", chunk_ids, batches).to_delayed().ravel()
        task = delayed(kernel, pure=True)
        return [
            task(m, i, segment[b], self.chunk_lengths[b], *args)
            for b, m, i in zip(batches, mz, intensity, strict=True)
        ]

    def _positions(self, ids: np.ndarray) -> np.ndarray:
        """Per chunk: the position of its spectrum in ``ids``, or -1."""
        position = np.full(len(self.spectra), -1, dtype=np.int64)
        position[np.asarray(ids, dtype=np.int64)] = np.arange(len(ids))
        return position[self.chunk_spectrum]

    def xic_parts(self, ids: np.ndarray, low: np.ndarray, high: np.ndarray) -> list:
        """Lazy ``(rows, sums)`` pieces; only chunks of spectra ``ids`` whose
        ``[chunk_start, chunk_end]`` meets a window are read."""
        segment = self._positions(ids)
        keep = (segment >= 0) & overlapping(self.chunk_start, self.chunk_end, low, high)
        return self._parts(np.flatnonzero(keep), segment, _xic_kernel, low, high)

    def stats_parts(self, ids: np.ndarray) -> list:
        segment = self._positions(ids)
        return self._parts(np.flatnonzero(segment >= 0), segment, _stats_kernel)

    def points(self, ids: np.ndarray | None = None):
        """A Dask dataframe (spectrum_index, mz, intensity) of spectra ``ids`` (default all)."""
        import dask.dataframe as dd

        ids = np.arange(len(self.spectra)) if ids is None else np.asarray(ids)
        chunk_ids = np.flatnonzero(self._positions(ids) >= 0)
        parts = self._parts(chunk_ids, self.chunk_spectrum, _frame_kernel) or [POINTS_META]
        return dd.from_delayed(parts, meta=POINTS_META, verify_meta=False)

    def __repr__(self) -> str:
        return f"ZarrRun({self.source!r}, spectra={len(self.spectra)})"


@per_file(64, marker="zarr.json")
def run_frames(path: str, run: str, k: int) -> Frames:
    """The frames of signal array ``path`` (the ``k``-th of run ``run``), parsed once per
    process, again when the array's ``zarr.json`` changes (a run exported again)."""
    offsets = chunk_files(child(run, CHUNK_OFFSETS))
    frame_bytes = chunk_files(child(run, FRAME_BYTES))
    chunks = offsets.length - 1
    table = frame_bytes.read_span(k * chunks, (k + 1) * chunks)
    return Frames(chunk_files(path), offsets.read_span(0, offsets.length), table)


class FrameSource:
    """A picklable source of whole mzPeak chunks of one signal array, for
    :class:`~mzpeak_dask.zarr_runs.store.SelectionAdapter` (its frames are found again in
    each process, from :func:`run_frames`)."""

    def __init__(self, path: str, run: str, k: int):
        self.path, self.run, self.k = path, run, k

    @property
    def frames(self) -> Frames:
        return run_frames(self.path, self.run, self.k)

    @property
    def dtype(self) -> np.dtype:
        return self.frames.files.dtype

    def read_points(self, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """The point ranges ``[start, start + length)``, concatenated: whole mzPeak chunks are
        read frame by frame; anything else through the chunks that hold it."""
        frames = self.frames
        ids = np.minimum(np.searchsorted(frames.offsets, starts), max(frames.chunks - 1, 0))
        if (
            len(starts)
            and np.array_equal(frames.offsets[ids], starts)
            and np.array_equal(frames.offsets[ids + 1] - starts, lengths)
        ):
            return frames.read(ids)
        return self.take(point_index(starts, lengths))

    def take(self, index: np.ndarray) -> np.ndarray:
        """Values at sorted point indices, reading only the mzPeak chunks they fall in."""
        frames = self.frames
        if not len(index):
            return np.zeros(0, dtype=frames.files.dtype)
        chunk = np.searchsorted(frames.offsets, index, side="right") - 1
        ids = np.unique(chunk)
        values = frames.read(ids)
        before = np.concatenate(([0], np.cumsum(np.diff(frames.offsets)[ids])[:-1]))
        return values[index - frames.offsets[chunk] + before[np.searchsorted(ids, chunk)]]

    def __reduce__(self) -> tuple:
        return (FrameSource, (self.path, self.run, self.k))


class ZarrSource(RunSource):
    """Zarr stores written by the export: a store (all its run groups) or one run group."""

    name = "Zarr store"

    @classmethod
    def guess_can_open(cls, path: Path) -> bool:
        return path.is_dir() and (path / "zarr.json").exists()

    @classmethod
    def open(cls, path: Path | str) -> list[Run]:
        """The runs of a store or run group: a folder, a remote store's URL, or a single-file
        run's location (:mod:`~mzpeak_dask.zarr_runs.locations`)."""
        location = str(path)
        group = _group(location)
        if group.attrs.get("format") == FORMAT:
            return [ZarrRun(location)]
        try:
            names = sorted(
                name
                for name, child in group.groups()
                if not name.startswith(".") and child.attrs.get("format") == FORMAT
            )
        except METADATA_ERRORS as exc:
            raise ZarrStoreError(f"{describe(location)}: damaged: {_reason(exc)}") from None
        if not names:
            raise InputError(f"{path}: a Zarr store without exported runs")
        return [ZarrRun(child(location, name)) for name in names]


# what zarr raises on a zarr.json that is not JSON or lacks a field (it checks as it parses)
METADATA_ERRORS = (KeyError, TypeError, ValueError, AttributeError)


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__} {text}"[:200] if text else type(exc).__name__


def _group(location: str) -> zarr.Group:
    """The group at ``location``: InputError when there is none, ZarrStoreError when its
    metadata is damaged."""
    try:
        return open_group(location)
    except (FileNotFoundError, zarr.errors.GroupNotFoundError, zarr.errors.NodeTypeValidationError):
        raise InputError(f"{describe(location)}: no Zarr group there") from None
    except zipfile.BadZipFile as exc:
        raise ZarrStoreError(f"{describe(location)}: damaged: not a ZIP file ({exc})") from None
    except METADATA_ERRORS as exc:
        raise ZarrStoreError(f"{describe(location)}: damaged group: {_reason(exc)}") from None


__all__ = ["ZarrRun", "ZarrSource"]
