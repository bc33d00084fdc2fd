"""One run group of a Zarr export opened for analysis, as lazy Dask arrays.

The per-chunk and per-spectrum arrays are small and read when the run is opened. The signal
arrays stay on disk: :meth:`ZarrRun.array` is a Dask array over the whole rectilinear array
(one Dask chunk per Zarr chunk by default, through the adapter of toolchain notes 5.3), and
:meth:`ZarrRun.selection` one over a subset of its chunks. Chromatograms first pick chunks by
``chunk_spectrum_index`` (MS level, RT range) and, for XICs, by ``chunk_start``/``chunk_end``
against the m/z windows; only those chunks are read, in batches of whole spectra of about
``BATCH_POINTS`` points (one Dask task each).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import zarr
from dask import delayed

from ..errors import InputError
from ..zarr_runs import FORMAT, PER_CHUNK, PER_SPECTRUM
from ..zarr_runs.chunks import chunk_files
from ..zarr_runs.locations import child, run_name
from ..zarr_runs.store import (
    ChunkAdapter,
    SelectionAdapter,
    cached_array,
    dask_array,
    enable_rectilinear,
    grid,
    open_group,
    read_whole,
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
        self.attrs = dict(open_group(self.source).attrs)
        tables = {name: read_whole(self._at(name)) for name in (*PER_CHUNK, *PER_SPECTRUM)}
        self.chunk_spectrum = tables["chunk_spectrum_index"].astype(np.int64)
        self.chunk_start, self.chunk_end = tables["chunk_start"], tables["chunk_end"]
        self.spectrum_offsets = tables["spectrum_offsets"].astype(np.int64)
        self.chunk_lengths = grid(self._at("mz"))
        self.chunk_offsets = np.concatenate(([0], np.cumsum(self.chunk_lengths))).astype(np.int64)
        self.spectra = spectra_frame(tables["time"], tables["ms_level"], tables["precursor_mz"])

    def _at(self, name: str) -> str:
        return child(self.source, name)

    def _adapter(self, name: str) -> ChunkAdapter:
        files = chunk_files(self._at(name))
        if files.direct:
            return ChunkAdapter(files.path, (int(files.offsets[-1]),), files.dtype)
        array = cached_array(self._at(name))
        return ChunkAdapter(self._at(name), array.shape, array.dtype)

    def array(self, name: str, chunks: np.ndarray | None = None):
        """A Dask array over a whole signal array; its chunks are the Zarr (mzPeak) chunks
        unless ``chunks`` groups them."""
        return dask_array(self._adapter(name), self.chunk_lengths if chunks is None else chunks)

    def selection(self, name: str, chunk_ids: np.ndarray, batches: list[np.ndarray] | None = None):
        """A Dask array of the points of chunks ``chunk_ids`` (sorted), concatenated; one Dask
        chunk per batch of chunk ids (default: one per Zarr chunk)."""
        chunk_ids = np.asarray(chunk_ids, dtype=np.int64)
        starts, lengths = self.chunk_offsets[chunk_ids], self.chunk_lengths[chunk_ids]
        if batches is None:
            sizes = self.chunk_lengths[chunk_ids]
        else:
            sizes = np.array([self.chunk_lengths[b].sum() for b in batches], dtype=np.int64)
        return dask_array(SelectionAdapter(self._adapter(name), starts, lengths), sizes)

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
        try:
            group = open_group(location)
        except (FileNotFoundError, zarr.errors.GroupNotFoundError, KeyError):
            raise InputError(f"{path}: no Zarr group there") from None
        if group.attrs.get("format") == FORMAT:
            return [ZarrRun(location)]
        names = sorted(
            name
            for name, child in group.groups()
            if not name.startswith(".") and child.attrs.get("format") == FORMAT
        )
        if not names:
            raise InputError(f"{path}: a Zarr store without exported runs")
        return [ZarrRun(child(location, name)) for name in names]


__all__ = ["ZarrRun", "ZarrSource"]
