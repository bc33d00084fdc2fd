"""One mzPeak archive opened for analysis: lazy Dask pieces over blocks of spectra.

Spectrum metadata is read when the run is opened (it is small); signal is read by Dask tasks,
each over a block of selected spectra. A block reads only the row groups whose index statistics
can hold one of its spectra, in one Parquet read, so selecting spectra by MS
level and RT range prunes row groups (of point and chunked archives). In a chunked archive the
chunk rows are pruned as well, by ``<axis>_chunk_start``/``_end`` against the m/z windows, and
only the rows that can hold a target are decoded (in one vectorised call per block).
Parquet reads are single-threaded: Dask already runs blocks side by side, and Arrow's thread
pool nested under Dask's threads made a block's read slower (74 ms against 41 ms measured).
An XIC reads a block's row groups in pieces of at most ``PIECE_BYTES`` (uncompressed), so its
memory is bounded by a piece, whatever the size of the spectra or of the run (the mapped pages
of a read are released after it: :mod:`mzpeak_dask.read.storage`).

For sums and maxima the stored points are used as they are: null-marked points (zero
intensity) are left out instead of being reconstructed, which does not change any sum.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
from dask import delayed

from ..format import vocabulary as V
from ..read.archive import MzPeakArchive, open_archive
from ..read.entity import spectrum_columns
from ..read.signal import SignalReader
from ..storage.filecache import FileCache
from .kernels import hit_sums, item_window_sums, overlapping, segment_stats, window_hits
from .source import Run, RunSource

# a block (one task's spectra) holds at most BLOCK_SPECTRA spectra and, past its first
# spectrum, BLOCK_POINTS points by the archive's own counts: a block of big profile spectra
# holds about as many points as a Zarr batch (zarr_run.BATCH_POINTS), not 256 spectra's worth
BLOCK_SPECTRA = 256
BLOCK_POINTS = 1 << 20
PIECE_BYTES = 8 << 20
# widening of stored chunk bounds when pruning: Numpress-linear chunks decode to values a
# little off the stored (exact) chunk_start / chunk_end
CHUNK_SLACK = 0.01
_EMPTY = (np.zeros(0), np.zeros(0))
POINTS_META = pd.DataFrame(
    {
        "spectrum_index": pd.Series([], dtype="int64"),
        "mz": pd.Series([], dtype="float64"),
        "intensity": pd.Series([], dtype="float64"),
    }
)


def _block_archive(path: str) -> MzPeakArchive:
    return MzPeakArchive(path, check=False)


# The archive as the block tasks read it: opened checked by the run (ArchiveRun, with
# ``cached_archive``), here only the members a task reads are opened, once per thread (signal
# readers cache a row group). A full opening of the 1 GB run of bench_archive_xic takes about
# 100 MB and 0.1 to 0.4 s, once per thread.
block_archive = FileCache(_block_archive, 8, per_thread=True, close=MzPeakArchive.close)


def spectra_frame(time: np.ndarray, ms_level: np.ndarray, precursor: np.ndarray) -> pd.DataFrame:
    frame = pd.DataFrame({"time": time, "ms_level": ms_level, "precursor_mz": precursor})
    frame.index.name = "spectrum_index"
    return frame


def _intensity_view(signal: SignalReader) -> int | None:
    kinds = [v.array_type for v in signal.views]
    if V.INTENSITY_ARRAY in kinds:
        return kinds.index(V.INTENSITY_ARRAY)
    return 1 if len(kinds) > 1 else None


def _valid(values: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    return np.ones(len(values), bool) if valid is None else valid


def read_rows(
    signal: SignalReader, ids: np.ndarray, groups: list[int] | None = None
) -> tuple[pa.StructArray, np.ndarray]:
    """The rows of items ``ids`` (sorted), reading only the row groups whose index statistics
    can hold one of them (or ``groups``), in one Parquet read; and which ids have rows."""
    table = signal.read_groups(signal.groups_for(ids) if groups is None else groups)
    rows = table.column(signal.prefix).combine_chunks()
    index = _items(signal, rows)
    if np.any(index[1:] < index[:-1]):  # the format sorts rows by item; tolerate other files
        keep = np.isin(index, ids)
        return rows.filter(pa.array(keep)), np.isin(ids, index[keep])
    # rows sorted by item: the row range of each wanted item (disjoint ranges)
    left, right = np.searchsorted(index, ids, side="left"), np.searchsorted(index, ids, "right")
    if (right - left).sum() == len(index):  # every row wanted
        return rows, right > left
    marks = np.zeros(len(index) + 1, np.int64)
    np.add.at(marks, left, 1)
    np.add.at(marks, right, -1)
    keep = np.cumsum(marks[:-1]) > 0
    return rows.filter(pa.array(keep)), right > left


def pieces(signal: SignalReader, ids: np.ndarray) -> list[list[int]]:
    """The row groups that can hold items ``ids`` (sorted), in runs of at most ``PIECE_BYTES``
    of uncompressed data (or one row group)."""
    md = signal.file.metadata
    out: list[list[int]] = []
    size = 0
    for g in signal.groups_for(ids):
        stored = md.row_group(g).total_byte_size
        if not out or size + stored > PIECE_BYTES:
            out.append([])
            size = 0
        out[-1].append(g)
        size += stored
    return out


def _prune(signal: SignalReader, rows: pa.StructArray, windows: tuple) -> pa.StructArray:
    """The chunk rows whose m/z range can meet a window."""
    main = signal.main.columns
    start = rows.field(main[V.CHUNK_START].column).to_numpy(zero_copy_only=False)
    end = rows.field(main[V.CHUNK_END].column).to_numpy(zero_copy_only=False)
    end = np.fmax(end, start)  # the reference writes end = 0.0 for a one-value chunk
    keep = overlapping(start - CHUNK_SLACK, end + CHUNK_SLACK, *windows)
    return rows.filter(pa.array(keep))


def _items(signal: SignalReader, rows: pa.StructArray) -> np.ndarray:
    """The item index of each row as int64 (a view of unsigned 64-bit values, not a copy)."""
    values = rows.field(signal.index_name).to_numpy(zero_copy_only=False)
    return values.view(np.int64) if values.dtype == np.uint64 else values.astype(np.int64)


def _points(signal: SignalReader, rows: pa.StructArray) -> tuple:
    """Stored m/z, intensity and item index of every point of ``rows`` that is neither null
    nor NaN."""
    k = _intensity_view(signal)
    item = _items(signal, rows)
    if k is None or len(rows) == 0:
        return (*_EMPTY, np.zeros(0, np.int64))
    if signal.chunked:
        raw, lengths = signal.decode_rows(rows)
        (mz, mz_valid), (intensity, int_valid) = raw[0], raw[k]
        keep = _valid(mz, mz_valid) & _valid(intensity, int_valid)
        item = np.repeat(item, lengths)
    else:  # the values as stored (no copy), and where neither is null
        columns = (signal.main.columns[V.POINT].column, signal.views[k].columns[V.POINT].column)
        arrays = [rows.field(c) for c in columns]
        mz, intensity = (_stored(a) for a in arrays)
        keep = _present(arrays[0]) & _present(arrays[1])
    if mz.dtype.kind == "f":
        keep &= mz == mz  # NaN
    if intensity.dtype.kind == "f":
        keep &= intensity == intensity
    return mz[keep], intensity[keep], item[keep]


def _block_points(source: str, ids: np.ndarray, windows: tuple | None) -> tuple:
    """Stored points of spectra ``ids`` (sorted) with the position of their spectrum in
    ``ids``: from the data member, and from the peaks member for spectra without data rows."""
    archive = block_archive(source)
    parts, missing = [], ids
    for kind in (V.DATA_ARRAYS, V.PEAKS):
        signal = archive.signal(V.SPECTRUM, kind)
        if signal is None or not len(missing):
            continue
        rows, found = read_rows(signal, missing)
        missing = missing[~found]
        if windows is not None and signal.chunked:
            rows = _prune(signal, rows, windows)
        parts.append(_points(signal, rows))
    if len(parts) == 1:  # rows come sorted by spectrum
        mz, intensity, item = parts[0]
        return mz, intensity, _places(ids, item)
    mz = np.concatenate([np.zeros(0), *(p[0] for p in parts)])
    intensity = np.concatenate([np.zeros(0), *(p[1] for p in parts)])
    item = np.concatenate([np.zeros(0, np.int64), *(p[2] for p in parts)])
    order = np.argsort(item, kind="stable")  # the peaks member's spectra among the others
    return mz[order], intensity[order], _places(ids, item[order])


def _places(ids: np.ndarray, item: np.ndarray) -> np.ndarray:
    """The place in ``ids`` of each point's spectrum ``item`` (sorted, each in ``ids``),
    found once per spectrum, not per point."""
    starts = np.flatnonzero(np.r_[True, item[1:] != item[:-1]]) if len(item) else item
    lengths = np.diff(np.r_[starts, len(item)])
    return np.repeat(np.searchsorted(ids, item[starts]), lengths)


def block_cuts(points: np.ndarray) -> list[int]:
    """Where blocks of spectra with ``points`` points each (0 where unknown) begin and end:
    ``[0, ..., len(points)]``, at most ``BLOCK_SPECTRA`` spectra and, past the first,
    ``BLOCK_POINTS`` points a block."""
    ends = np.cumsum(np.asarray(points, dtype=np.int64))
    cuts, n = [0], len(ends)
    while cuts[-1] < n:
        start = cuts[-1]
        before = ends[start - 1] if start else 0
        fits = int(np.searchsorted(ends, before + BLOCK_POINTS, side="right"))
        cuts.append(min(start + BLOCK_SPECTRA, max(fits, start + 1)))
    return cuts


class ArchivePoints:
    """Spectra ``ids`` (sorted) of an mzPeak archive, in blocks ``cuts`` (of :func:`block_cuts`),
    at ``positions`` (one per spectrum)."""

    def __init__(self, source: str, ids: np.ndarray, positions: np.ndarray, cuts: list[int]):
        self.source = source
        self.ids = np.asarray(ids, dtype=np.int64)
        self.at = np.asarray(positions, dtype=np.int64)
        self.cuts = cuts

    @property
    def blocks(self) -> int:
        return len(self.cuts) - 1

    def positions(self, k: int) -> np.ndarray:
        """The positions of block ``k``'s spectra."""
        return self.at[self.cuts[k] : self.cuts[k + 1]]

    def read(self, k: int, windows: tuple | None) -> tuple:
        """``(mz, intensity, position)`` of the stored (non-null) points of block ``k``,
        spectrum by spectrum; chunk rows of a chunked archive pruned to ``windows``."""
        a, b = self.cuts[k], self.cuts[k + 1]
        mz, intensity, segment = _block_points(self.source, self.ids[a:b], windows)
        return mz, intensity, self.at[a:b][segment]


def raw_spectrum(source: str, i: int, windows: tuple | None = None) -> tuple:
    """The stored (non-null) m/z and intensity of spectrum ``i`` of archive ``source``
    (chunk rows pruned to ``windows`` = (low, high) when given)."""
    mz, intensity, _ = _block_points(str(source), np.array([i]), windows)
    return mz, intensity


def block_xic(source: str, ids: np.ndarray, first: int, low: np.ndarray, high: np.ndarray):
    """``(rows, sums)`` of one block: rows are positions in the run's selection. Spectra
    without rows in the data member are read from the peaks member."""
    archive = block_archive(source)
    sums = np.zeros((len(ids), len(low)))
    missing = ids
    peaks = archive.signal(V.SPECTRUM, V.PEAKS)
    for signal in (archive.signal(V.SPECTRUM, V.DATA_ARRAYS), peaks):
        if signal is None or not len(missing):
            continue
        more = signal is not peaks and peaks is not None  # which spectra have rows matters
        part = np.zeros((len(missing), len(low)))
        found = np.zeros(len(missing), bool)
        for groups in pieces(signal, missing):
            if signal.chunked:
                rows, has = read_rows(signal, missing, groups)
                mz, intensity, item = _points(signal, _prune(signal, rows, (low, high)))
                part += item_window_sums(mz, intensity, item, missing, low, high)
            else:
                sums_of, has = _point_sums(signal, groups, missing, low, high, more)
                part += sums_of
            found |= has
        sums[np.searchsorted(ids, missing)] += part
        missing = missing[~found]
    return np.arange(first, first + len(ids)), sums


def _point_sums(
    signal: SignalReader,
    groups: list[int],
    ids: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    presence: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """XIC sums of spectra ``ids`` from row groups ``groups`` of a point-layout member,
    reading only the index, m/z and intensity columns; and which ids have rows there (when
    ``presence``, else none). The m/z and intensity values are used as stored (no copy
    replacing nulls by NaN): only the points inside a window are checked for nulls.

    Row groups whose index statistics hold one item (a big spectrum alone in its row group)
    leave out the index column: their rows' item is known. The index is 8 bytes a point in
    memory; leaving it out took the one-thread XIC of the 1 GB run of
    tests/benchmarks/bench_archive_xic.py from 1.70 s to 1.41 s (best of 5, interleaved)."""
    k = _intensity_view(signal)
    sums = np.zeros((len(ids), len(low)))
    lows, highs = signal.index_bounds(groups)
    rows = np.array([signal.file.metadata.row_group(g).num_rows for g in groups], np.int64)
    alone = bool(np.all(lows == highs))
    names = [] if alone else [signal.index_name]
    if k is not None:
        names += [v.columns[V.POINT].column for v in (signal.main, signal.views[k])]
    present = [lows[rows > 0].astype(np.int64)] if alone and presence else []
    table = signal.read_groups(groups, [f"{signal.prefix}.{n}" for n in names]) if names else None
    chunks = table.column(signal.prefix).chunks if table is not None else []
    starts = np.cumsum(rows) - rows
    first = 0  # the position of a chunk's first row among the row groups' rows
    for chunk in chunks:
        at, first = first, first + len(chunk)
        columns = dict(zip([f.name for f in chunk.type], chunk.flatten(), strict=True))
        index = None if alone else columns[signal.index_name]
        if index is not None and presence and len(index):
            item = index.to_numpy(zero_copy_only=False)
            present.append(item[np.r_[0, np.flatnonzero(np.diff(item)) + 1]])
        if k is None or not len(chunk):
            continue
        mz, intensity = columns[names[-2]], columns[names[-1]]
        hit, window = window_hits(_stored(mz), low, high)
        valid = _valid_at(mz, hit) & _valid_at(intensity, hit)
        hit, window = hit[valid], window[valid]
        if index is None:
            item = lows[np.searchsorted(starts, hit + at, side="right") - 1]
        else:
            item = index.take(pa.array(hit)).to_numpy(zero_copy_only=False)
        sums += hit_sums(item, _stored(intensity)[hit], window, ids, len(low))
    found = np.isin(ids, np.concatenate([np.zeros(0, np.int64), *present]))
    return sums, found


def _stored(array: pa.Array) -> np.ndarray:
    """The values of a numeric array as stored, whatever lies under its nulls (zero-copy)."""
    if array.null_count and pa.types.is_primitive(array.type) and array.type != pa.bool_():
        buffers = [None, array.buffers()[1]]
        array = pa.Array.from_buffers(array.type, len(array), buffers, offset=array.offset)
    return array.to_numpy(zero_copy_only=False)


def _present(array: pa.Array) -> np.ndarray:
    """Whether each value of ``array`` is not null (from its validity bits)."""
    if not array.null_count:
        return np.ones(len(array), bool)
    bits = np.unpackbits(np.frombuffer(array.buffers()[0], np.uint8), bitorder="little")
    return bits[array.offset : array.offset + len(array)].view(bool)


def _valid_at(array: pa.Array, positions: np.ndarray) -> np.ndarray:
    """Whether the values at ``positions`` of ``array`` are not null."""
    if not array.null_count:
        return np.ones(len(positions), bool)
    bits = np.frombuffer(array.buffers()[0], np.uint8)
    at = positions + array.offset
    return ((bits[at >> 3] >> (at & 7)) & 1).astype(bool)


def block_stats(source: str, ids: np.ndarray, first: int):
    mz, intensity, segment = _block_points(source, ids, None)
    return np.arange(first, first + len(ids)), segment_stats(mz, intensity, segment, len(ids))


def block_frame(source: str, ids: np.ndarray) -> pd.DataFrame:
    """The decoded points of a block of spectra (as ``open_archive`` returns them)."""
    archive = block_archive(source)
    spectra = [archive.read_spectrum(int(i)) for i in ids]
    lengths = [len(s.mz) for s in spectra]
    return pd.DataFrame(
        {
            "spectrum_index": np.repeat(np.asarray(ids, dtype=np.int64), lengths),
            "mz": np.concatenate([np.zeros(0), *(s.mz for s in spectra)]),
            "intensity": np.concatenate([np.zeros(0), *(s.intensity for s in spectra)]),
        }
    )


class ArchiveRun(Run):
    """An mzPeak archive (ZIP or directory) as a run of the analysis."""

    def __init__(self, path: str | Path):
        self.source = str(path)
        self.name = Path(path).stem
        with open_archive(self.source) as archive:  # nothing of it kept: tasks open their own
            tables = archive.tables_of(V.SPECTRUM)
            self.spectra = spectra_frame(*spectrum_columns(tables))
            counts = tables.values_of(V.NUMBER_OF_DATA_POINTS)  # None where a writer left it out
            self.point_counts = np.array([n or 0 for n in counts], dtype=np.int64)

    def _blocks(self, ids: np.ndarray) -> list[tuple[np.ndarray, int]]:
        cuts = block_cuts(self.point_counts[ids])
        return [(ids[a:b], a) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]

    def xic_parts(self, ids: np.ndarray, low: np.ndarray, high: np.ndarray) -> list:
        """Lazy ``(rows, sums)`` pieces of the XIC of spectra ``ids``."""
        task = delayed(block_xic, pure=True)
        return [task(self.source, block, a, low, high) for block, a in self._blocks(ids)]

    def stats_parts(self, ids: np.ndarray) -> list:
        """Lazy ``(rows, [tic, base peak m/z, base peak intensity])`` pieces."""
        task = delayed(block_stats, pure=True)
        return [task(self.source, block, a) for block, a in self._blocks(ids)]

    def point_readers(self, ids: np.ndarray, groups: list, windows=None) -> list:
        """Readers of blocks of spectra (:func:`block_cuts`; see :meth:`Run.point_readers`)."""
        return [
            ArchivePoints(self.source, ids[g], g, block_cuts(self.point_counts[ids[g]]))
            for g in groups
        ]

    def points(self, ids: np.ndarray | None = None):
        """A Dask dataframe (spectrum_index, mz, intensity) of the decoded spectra ``ids``."""
        import dask.dataframe as dd

        ids = np.arange(len(self.spectra)) if ids is None else np.unique(ids)
        task = delayed(block_frame, pure=True)
        parts = [task(self.source, block) for block, _ in self._blocks(ids)] or [POINTS_META]
        return dd.from_delayed(parts, meta=POINTS_META, verify_meta=False)

    def __repr__(self) -> str:
        return f"ArchiveRun({self.source!r}, spectra={len(self.spectra)})"


class ArchiveSource(RunSource):
    """mzPeak archives: any file or folder that is not a Zarr store (the archive reader says
    why one is not an archive)."""

    name = "mzPeak archive"

    @classmethod
    def guess_can_open(cls, path: Path) -> bool:
        return path.is_file() or path.is_dir()

    @classmethod
    def open(cls, path: Path) -> list[Run]:
        return [ArchiveRun(path)]


__all__ = ["POINTS_META", "ArchiveRun", "ArchiveSource", "raw_spectrum", "spectra_frame"]
