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

import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import zarr
from dask import delayed

from ..errors import InputError, ZarrStoreError
from ..zarr_runs import FORMAT, PER_CHUNK, PER_SPECTRUM
from ..zarr_runs.chunks import ChunkFiles, chunk_files
from ..zarr_runs.locations import child, describe, run_name
from ..zarr_runs.store import (
    ChunkAdapter,
    SelectionAdapter,
    dask_array,
    enable_rectilinear,
    open_group,
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
        for name in (*PER_CHUNK, *PER_SPECTRUM):
            files = self._files(name)
            tables[name] = files.read_span(0, files.length)
        mz = self._files("mz")
        self.chunk_lengths, self.point_count = mz.lengths, mz.length
        self.chunk_offsets = np.concatenate(([0], np.cumsum(self.chunk_lengths))).astype(np.int64)
        self._check(tables)
        self.chunk_spectrum = tables["chunk_spectrum_index"].astype(np.int64)
        self.chunk_start, self.chunk_end = tables["chunk_start"], tables["chunk_end"]
        self.spectrum_offsets = tables["spectrum_offsets"].astype(np.int64)
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
        """The per-chunk and per-spectrum arrays agree with the signal arrays' grid."""
        chunks, points = len(self.chunk_lengths), self.point_count
        spectra = len(tables["time"])
        sizes = {name: chunks for name in PER_CHUNK}
        sizes.update({name: spectra for name in PER_SPECTRUM}, spectrum_offsets=spectra + 1)
        for name, size in sizes.items():
            if len(tables[name]) != size:
                raise ZarrStoreError(
                    f"{describe(self._at(name))}: damaged: {len(tables[name]):,} values where "
                    f"the run has {size:,} ({chunks:,} chunks of mz, {spectra:,} spectra)"
                )
        owner, offsets = tables["chunk_spectrum_index"], tables["spectrum_offsets"]
        if chunks and (owner.min() < 0 or owner.max() >= spectra or np.any(np.diff(owner) < 0)):
            raise ZarrStoreError(
                f"{describe(self._at('chunk_spectrum_index'))}: damaged: not the spectra of "
                f"the chunks in order"
            )
        if offsets[0] != 0 or offsets[-1] != points or np.any(np.diff(offsets) < 0):
            raise ZarrStoreError(
                f"{describe(self._at('spectrum_offsets'))}: damaged: not the point offsets of "
                f"{spectra:,} spectra over {points:,} points"
            )

    def _adapter(self, name: str) -> ChunkAdapter:
        files = self._files(name)
        if files.length != self.point_count or not np.array_equal(
            files.lengths, self.chunk_lengths
        ):
            raise ZarrStoreError(f"{files}: damaged: its chunk grid is not that of mz")
        # every chunk of a signal array is written: a missing one is damage
        return ChunkAdapter(files.path, (files.length,), files.dtype, complete=True)

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
