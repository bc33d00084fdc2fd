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
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import zarr
from dask import delayed

from ..errors import InputError, ZarrStoreError
from ..storage.urls import scheme
from ..zarr_runs import (
    CHUNK_LENGTHS,
    CHUNK_TABLES,
    FORMAT,
    FORMAT_FAMILY,
    FRAME_BYTES,
    PER_SPECTRUM,
    PER_ZARR_CHUNK,
    TABLE_BYTES,
    ZARR_CHUNK_FIRST,
)
from ..zarr_runs.chunks import ChunkFiles, chunk_files
from ..zarr_runs.frames import Frames, over, tiled
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
from .point_readers import ZarrPoints
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


@dataclass
class ChunkTable:
    """The per-mzPeak-chunk entries of some Zarr chunks of a run (``zarr_ids``, sorted), in
    order: per mzPeak chunk its number in the run (``ids``), Zarr chunk, first point and
    points, spectrum, smallest and largest m/z, and per signal array its frame's byte size."""

    zarr_ids: np.ndarray
    counts: np.ndarray  # mzPeak chunks of each of those Zarr chunks
    ids: np.ndarray
    zarr_chunk: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    spectrum: np.ndarray
    chunk_start: np.ndarray
    chunk_end: np.ndarray
    frame_bytes: np.ndarray  # (signal arrays, mzPeak chunks)

    def rows(self, chunk_ids: np.ndarray) -> np.ndarray:
        """Positions of mzPeak chunks ``chunk_ids`` (sorted; all in the table) in the table."""
        return np.searchsorted(self.ids, np.asarray(chunk_ids, dtype=np.int64))


class ZarrRun(Run):
    """A run group written by :func:`mzpeak_dask.export.zarr.to_zarr`.

    Opening it reads the per-spectrum and per-Zarr-chunk tables only; a query picks Zarr chunks
    (by their spectra and m/z ranges), then reads the per-mzPeak-chunk entries of those Zarr
    chunks (:meth:`chunk_table`), then the frames of the mzPeak chunks it needs."""

    def __init__(self, path: str | Path):
        enable_rectilinear()
        self.source = str(path)  # a folder, or a location of zarr_runs.locations
        self.name = run_name(self.source)
        self.attrs = dict(_group(self.source).attrs)
        refuse_older(self.source, self.attrs)
        tables = {}
        for name in (*PER_SPECTRUM, *PER_ZARR_CHUNK, ZARR_CHUNK_FIRST, TABLE_BYTES):
            files = self._files(name)
            tables[name] = files.read_span(0, files.length)
        mz = self._files("mz")
        self.zarr_lengths, self.point_count = mz.lengths, mz.length
        self.zarr_offsets = mz.offsets[: len(mz.lengths) + 1] if mz.length else np.zeros(1, int)
        self.arrays = list(self.attrs.get("arrays", {"mz": None, "intensity": None}))
        self._check(tables)
        self.first = tables[ZARR_CHUNK_FIRST].astype(np.int64)
        self.table_bytes = tables[TABLE_BYTES].astype(np.int64).reshape(len(CHUNK_TABLES), -1)
        self.spectrum_offsets = tables["spectrum_offsets"].astype(np.int64)
        self.zarr_chunk_ranges = {name: tables[name] for name in PER_ZARR_CHUNK}
        self.spectra = spectra_frame(tables["time"], tables["ms_level"], tables["precursor_mz"])
        # the Zarr chunk holding each spectrum's points (-1: a spectrum without points)
        points = np.diff(self.spectrum_offsets)
        zarr = np.searchsorted(self.zarr_offsets, self.spectrum_offsets[:-1], side="right") - 1
        self.spectrum_zarr_chunk = np.where(points > 0, zarr, -1)

    @property
    def chunk_count(self) -> int:
        """mzPeak chunks in the run."""
        return int(self.first[-1])

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

    def _damaged(self, name: str, problem: str) -> ZarrStoreError:
        return ZarrStoreError(f"{describe(self._at(name))}: damaged: {problem}")

    def _check(self, tables: dict[str, np.ndarray]) -> None:
        """The per-spectrum and per-Zarr-chunk tables agree with each other and with the
        signal arrays' grid (the per-mzPeak-chunk tables are checked Zarr chunk by Zarr chunk
        as queries read them)."""
        points = self.point_count
        spectra, zarr_chunks = len(tables["time"]), len(self.zarr_lengths)
        sizes = {name: spectra for name in PER_SPECTRUM}
        sizes.update({name: zarr_chunks for name in PER_ZARR_CHUNK}, spectrum_offsets=spectra + 1)
        sizes[ZARR_CHUNK_FIRST] = zarr_chunks + 1
        sizes[TABLE_BYTES] = zarr_chunks * len(CHUNK_TABLES)
        for name, size in sizes.items():
            if len(tables[name]) != size:
                raise self._damaged(
                    name,
                    f"{len(tables[name]):,} values where the run has {size:,} ({spectra:,} "
                    f"spectra, {zarr_chunks:,} Zarr chunks of mz)",
                )
        offsets = tables["spectrum_offsets"]
        if offsets[0] != 0 or offsets[-1] != points or np.any(np.diff(offsets) < 0):
            raise self._damaged("spectrum_offsets", f"not point offsets over {points:,} points")
        if not np.all(np.isin(self.zarr_offsets, offsets)):
            raise self._damaged("spectrum_offsets", "a Zarr chunk of mz ends inside a spectrum")
        first = tables[ZARR_CHUNK_FIRST]
        if first[0] != 0 or np.any(np.diff(first) < 1):
            raise self._damaged(ZARR_CHUNK_FIRST, "not increasing from 0")
        for name in CHUNK_TABLES:
            files = self._files(name)
            want = int(first[-1]) * (len(self.arrays) if name == FRAME_BYTES else 1)
            if files.length != want:
                raise ZarrStoreError(
                    f"{files}: damaged: {files.length:,} values where the run has {want:,}"
                )

    def _table_frames(self, k: int) -> Frames:
        """Where each Zarr chunk's entries lie in per-mzPeak-chunk table ``k``."""
        name = CHUNK_TABLES[k]
        width = len(self.arrays) if name == FRAME_BYTES else 1
        return over(self._files(name), self.first * width, self.table_bytes[k])

    def chunk_table(self, zarr_ids: np.ndarray | None = None) -> ChunkTable:
        """The per-mzPeak-chunk entries of Zarr chunks ``zarr_ids`` (default: all), read from
        their frames of the tables and nothing else, checked Zarr chunk by Zarr chunk."""
        zs = np.arange(len(self.zarr_lengths)) if zarr_ids is None else np.unique(zarr_ids)
        zs = zs.astype(np.int64)
        values = {name: self._table_frames(k).read(zs) for k, name in enumerate(CHUNK_TABLES)}
        counts = self.first[zs + 1] - self.first[zs]
        n = int(counts.sum())
        heads = np.cumsum(counts) - counts  # first row of each Zarr chunk
        local = np.arange(n) - np.repeat(heads, counts)
        ids = np.repeat(self.first[zs], counts) + local
        zarr_chunk = np.repeat(zs, counts)
        lengths = values[CHUNK_LENGTHS].astype(np.int64)
        spectrum = values["chunk_spectrum_index"].astype(np.int64)
        width = len(self.arrays)
        at = np.repeat(heads * width, counts) + local
        frame_bytes = values[FRAME_BYTES].astype(np.int64)
        frame_bytes = np.stack(
            [frame_bytes[at + k * np.repeat(counts, counts)] for k in range(width)]
        )
        self._check_entries(zs, counts, heads, lengths, spectrum)
        ends = np.cumsum(lengths)
        starts = self.zarr_offsets[zarr_chunk] + ends - lengths
        starts -= np.repeat(ends[heads] - lengths[heads], counts) if n else 0
        return ChunkTable(
            zs,
            counts,
            ids,
            zarr_chunk,
            starts,
            lengths,
            spectrum,
            values["chunk_start"].astype(np.float64),
            values["chunk_end"].astype(np.float64),
            frame_bytes,
        )

    def _check_entries(self, zs, counts, heads, lengths, spectrum) -> None:
        """Each Zarr chunk's mzPeak chunks are its spectra's points, in order."""
        if not len(lengths):
            return
        spectra = len(self.spectra)
        zarr = np.repeat(zs, counts)
        inside = (spectrum >= 0) & (spectrum < spectra)
        owner = np.where(inside, self.spectrum_zarr_chunk[np.clip(spectrum, 0, spectra - 1)], -1)
        step = np.diff(spectrum)
        bad = zarr[(owner != zarr) | (lengths < 1)]
        if not len(bad):
            falling = np.flatnonzero(step < 0) + 1  # a step inside a Zarr chunk is damage
            bad = zarr[falling[zarr[falling] == zarr[falling - 1]]]
        if not len(bad):
            points = np.bincount(spectrum, weights=lengths, minlength=spectra)
            spectra_of = np.unique(spectrum)
            wrong = spectra_of[points[spectra_of] != np.diff(self.spectrum_offsets)[spectra_of]]
            bad = self.spectrum_zarr_chunk[wrong]
            if not len(bad):  # spectra of these Zarr chunks with points but no chunks
                held = np.isin(self.spectrum_zarr_chunk, zs)
                missing = held & ~np.isin(np.arange(spectra), spectra_of)
                bad = self.spectrum_zarr_chunk[missing]
        if len(bad):
            z = int(bad[0])
            raise ZarrStoreError(
                f"{describe(self.source)}: Zarr chunk {z}: damaged: its mzPeak chunk tables "
                f"(chunk_lengths, chunk_spectrum_index) are not its spectra's points in order"
            )

    def _adapter(self, name: str) -> ChunkAdapter:
        files = self._files(name)
        if files.length != self.point_count or not np.array_equal(files.lengths, self.zarr_lengths):
            raise ZarrStoreError(f"{files}: damaged: its chunk grid is not that of mz")
        # every chunk of a signal array is written: a missing one is damage
        return ChunkAdapter(files.path, (files.length,), files.dtype, complete=True)

    def frames(self, name: str, table: ChunkTable | None = None) -> Frames:
        """Where the mzPeak chunks of ``table`` (default: all) lie in signal array ``name``'s
        Zarr chunks; entry ``i`` is the ``i``-th mzPeak chunk of the table."""
        table = self.chunk_table() if table is None else table
        files = self._adapter(name)  # the grid is that of mz
        k = self.arrays.index(name)
        return tiled(
            chunk_files(files.path),
            table.zarr_ids,
            table.counts,
            table.lengths,
            table.frame_bytes[k],
            ids=table.ids,
        )

    def array(self, name: str, chunks: np.ndarray | None = None):
        """A Dask array over a whole signal array; its chunks are the Zarr chunks unless
        ``chunks`` cuts it otherwise."""
        return dask_array(self._adapter(name), self.zarr_lengths if chunks is None else chunks)

    def _table_of(self, chunk_ids: np.ndarray) -> ChunkTable:
        """The entries of the Zarr chunks holding mzPeak chunks ``chunk_ids``."""
        chunk_ids = np.asarray(chunk_ids, dtype=np.int64)
        if len(chunk_ids) and (chunk_ids.min() < 0 or chunk_ids.max() >= self.chunk_count):
            raise IndexError(f"mzPeak chunks of {self.source} are 0 to {self.chunk_count - 1}")
        return self.chunk_table(np.searchsorted(self.first, chunk_ids, side="right") - 1)

    def selection(
        self,
        name: str,
        chunk_ids: np.ndarray,
        batches: list[np.ndarray] | None = None,
        table: ChunkTable | None = None,
    ):
        """A Dask array of the points of mzPeak chunks ``chunk_ids`` (sorted), concatenated; one
        Dask chunk per batch of chunk ids (default: one per mzPeak chunk). ``table``: entries
        holding those chunks (default: read here)."""
        chunk_ids = np.asarray(chunk_ids, dtype=np.int64)
        table = self._table_of(chunk_ids) if table is None else table
        rows = table.rows(chunk_ids)
        frames = self.frames(name, table)  # checked here, in one line, rather than in a task
        if batches is None:
            sizes = table.lengths[rows]
        else:
            sizes = np.array([table.lengths[table.rows(b)].sum() for b in batches], np.int64)
        source = FrameSource(frames.subset(rows))
        return dask_array(
            SelectionAdapter(source, source.frames.starts, source.frames.lengths), sizes
        )

    def _batches(self, table: ChunkTable, rows: np.ndarray) -> list[np.ndarray]:
        """Rows cut into batches of whole spectra, about ``BATCH_POINTS`` points each."""
        if not len(rows):
            return []
        ends = np.cumsum(table.lengths[rows])
        spectrum = table.spectrum[rows]
        change = np.flatnonzero(np.diff(spectrum)) + 1  # where a new spectrum starts
        wanted = np.arange(BATCH_POINTS, ends[-1], BATCH_POINTS)
        at = np.searchsorted(ends[change - 1], wanted, side="left")
        cuts = np.unique(change[at[at < len(change)]])
        return np.split(rows, cuts)

    def _parts(
        self, table: ChunkTable, rows: np.ndarray, segment: np.ndarray, kernel: Callable, *args
    ) -> list:
        batches = self._batches(table, rows)
        if not batches:
            return []
        ids = [table.ids[b] for b in batches]
        chunk_ids = table.ids[rows]
        mz = self.selection("mz", chunk_ids, ids, table).to_delayed().ravel()
        intensity = self.selection("intensity", chunk_ids, ids, table).to_delayed().ravel()
        task = delayed(kernel, pure=True)
        return [
            task(m, i, segment[b], table.lengths[b], *args)
            for b, m, i in zip(batches, mz, intensity, strict=True)
        ]

    def _positions(self, ids: np.ndarray) -> np.ndarray:
        """Per spectrum: its position in ``ids``, or -1."""
        position = np.full(len(self.spectra), -1, dtype=np.int64)
        position[np.asarray(ids, dtype=np.int64)] = np.arange(len(ids))
        return position

    def _zarr_chunks(self, ids: np.ndarray) -> np.ndarray:
        """The Zarr chunks holding points of spectra ``ids``."""
        zs = self.spectrum_zarr_chunk[np.asarray(ids, dtype=np.int64)]
        return np.unique(zs[zs >= 0])

    def xic_parts(self, ids: np.ndarray, low: np.ndarray, high: np.ndarray) -> list:
        """Lazy ``(rows, sums)`` pieces; only Zarr chunks of spectra ``ids`` whose m/z range
        meets a window are looked into, and of them only chunks of those spectra whose
        ``[chunk_start, chunk_end]`` meets a window are read."""
        zs = self._zarr_chunks(ids)
        ranges = self.zarr_chunk_ranges
        zs = zs[
            overlapping(ranges["zarr_chunk_mz_min"][zs], ranges["zarr_chunk_mz_max"][zs], low, high)
        ]
        table = self.chunk_table(zs)
        segment = self._positions(ids)[table.spectrum]
        keep = (segment >= 0) & overlapping(table.chunk_start, table.chunk_end, low, high)
        return self._parts(table, np.flatnonzero(keep), segment, _xic_kernel, low, high)

    def point_readers(self, ids: np.ndarray, groups: list, windows=None) -> list:
        """Readers of batches of whole spectra (see :meth:`Run.point_readers`): per group the
        mzPeak chunks of its spectra whose m/z range meets its windows."""
        zs = self._zarr_chunks(ids)
        if windows is not None and zs.size:
            low = np.concatenate([w[0] for w in windows])
            high = np.concatenate([w[1] for w in windows])
            ranges = self.zarr_chunk_ranges
            zs = zs[
                overlapping(
                    ranges["zarr_chunk_mz_min"][zs], ranges["zarr_chunk_mz_max"][zs], low, high
                )
            ]
        table = self.chunk_table(zs)
        segment = self._positions(ids)[table.spectrum]
        mz, intensity = self.frames("mz", table), self.frames("intensity", table)
        out = []
        for k, group in enumerate(groups):
            keep = np.isin(segment, group)
            if windows is not None:
                keep &= overlapping(table.chunk_start, table.chunk_end, *windows[k])
            rows = np.flatnonzero(keep)
            sizes = [len(b) for b in self._batches(table, rows)]
            out.append(
                ZarrPoints(
                    mz.subset(rows),
                    intensity.subset(rows),
                    segment[rows],
                    table.lengths[rows],
                    (table.chunk_start[rows], table.chunk_end[rows]),
                    [0, *np.cumsum(sizes, dtype=np.int64).tolist()],
                )
            )
        return out

    def stats_parts(self, ids: np.ndarray) -> list:
        table = self.chunk_table(self._zarr_chunks(ids))
        segment = self._positions(ids)[table.spectrum]
        return self._parts(table, np.flatnonzero(segment >= 0), segment, _stats_kernel)

    def points(self, ids: np.ndarray | None = None):
        """A Dask dataframe (spectrum_index, mz, intensity) of spectra ``ids`` (default all)."""
        import dask.dataframe as dd

        ids = np.arange(len(self.spectra)) if ids is None else np.asarray(ids)
        table = self.chunk_table(self._zarr_chunks(ids))
        rows = np.flatnonzero(self._positions(ids)[table.spectrum] >= 0)
        parts = self._parts(table, rows, table.spectrum, _frame_kernel) or [POINTS_META]
        return dd.from_delayed(parts, meta=POINTS_META, verify_meta=False)

    def __repr__(self) -> str:
        return f"ZarrRun({self.source!r}, spectra={len(self.spectra)})"


def refuse_older(location: str, attrs: dict) -> None:
    """A run group of another format of this export: one line saying to export it again."""
    found = attrs.get("format")
    if found != FORMAT:
        raise ZarrStoreError(
            f"{describe(location)}: a run exported as {found!r}, which this version does not "
            f"read ({FORMAT!r}): export it again"
        )


class FrameSource:
    """A picklable source of whole mzPeak chunks of one signal array (the frames of the
    chunks a query selected), for :class:`~mzpeak_dask.zarr_runs.store.SelectionAdapter`."""

    def __init__(self, frames: Frames):
        self.frames = frames

    @property
    def dtype(self) -> np.dtype:
        return self.frames.files.dtype

    def read_points(self, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """The point ranges ``[start, start + length)``, concatenated: whole mzPeak chunks are
        read frame by frame; anything else through the chunks that hold it."""
        frames = self.frames
        rows = np.minimum(np.searchsorted(frames.starts, starts), max(frames.chunks - 1, 0))
        if (
            len(starts)
            and np.array_equal(frames.starts[rows], starts)
            and np.array_equal(frames.lengths[rows], lengths)
        ):
            return frames.read(rows)
        return self.take(point_index(starts, lengths))

    def take(self, index: np.ndarray) -> np.ndarray:
        """Values at sorted point indices (within the selected chunks), reading only the
        mzPeak chunks they fall in."""
        frames = self.frames
        if not len(index):
            return np.zeros(0, dtype=frames.files.dtype)
        chunk = np.searchsorted(frames.starts, index, side="right") - 1
        rows = np.unique(chunk)
        values = frames.read(rows)
        before = np.concatenate(([0], np.cumsum(frames.lengths[rows])[:-1]))
        return values[index - frames.starts[chunk] + before[np.searchsorted(rows, chunk)]]


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
        if _exported(group.attrs.get("format")):  # an older format is refused by ZarrRun
            return [ZarrRun(location)]
        try:
            names = sorted(
                name
                for name, child in group.groups()
                if not name.startswith(".") and _exported(child.attrs.get("format"))
            )
        except METADATA_ERRORS as exc:
            raise ZarrStoreError(f"{describe(location)}: damaged: {_reason(exc)}") from None
        if not names and scheme(location) in ("http", "https"):  # a web server lists nothing
            raise InputError(
                f"{path}: a web server cannot list a Zarr store's runs; give each run "
                "group's URL (STORE/RUN)"
            )
        if not names:
            raise InputError(f"{path}: a Zarr store without exported runs")
        return [ZarrRun(child(location, name)) for name in names]


def _exported(found: object) -> bool:
    """Whether a group's ``format`` attribute is that of a run this export wrote (in any
    format)."""
    return isinstance(found, str) and found.startswith(FORMAT_FAMILY)


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
        if scheme(location) in ("http", "https") and location.endswith("/"):  # a folder of runs?
            raise InputError(
                f"{describe(location)}: no Zarr group there, and a web server cannot be listed "
                "for the runs under it; give each archive's or run group's URL"
            ) from None
        raise InputError(f"{describe(location)}: no Zarr group there") from None
    except zipfile.BadZipFile as exc:
        raise ZarrStoreError(f"{describe(location)}: damaged: not a ZIP file ({exc})") from None
    except METADATA_ERRORS as exc:
        raise ZarrStoreError(f"{describe(location)}: damaged group: {_reason(exc)}") from None


__all__ = ["ZarrRun", "ZarrSource"]
