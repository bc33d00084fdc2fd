"""Targeted quantification across many runs: a MINT target list integrated in every run into
one table, as Dask work.

The targets of each MS level are sorted by ``rt_min`` once and put in the graph once (one
key, shared by every task of every run). A run's targets are cut into pieces: those whose RT
window starts among the same ``GROUP_SPECTRA`` spectra of the run. One task per piece reads
the spectra of its targets' windows block by block (a reader of
:meth:`~mzpeak_dask.analysis.source.Run.point_readers`), each block pruned to the m/z windows
of the targets whose RT window meets it, keeps the (target, point) pairs it finds and hands
back its targets' figures: nothing else crosses between processes. A piece of a few thousand
spectra keeps the spectra read twice (by two pieces whose windows overlap) few.

Runs pass through in waves (:func:`_waves`): opened side by side, a few at a time, and
quantified once the runs opened hold ``WAVE_SPECTRA`` spectra, so the caller holds the
spectrum tables and pieces of a wave, never those of a whole repository; only the rows
accumulate.

The result is one row per (run, target) with the columns of :data:`COLUMNS`; the runs that
could not be read are listed, one line each, in ``result.attrs["failed"]`` (their rows are
absent; every other run's rows are there).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
from dask import delayed
from dask.delayed import Delayed

from ..errors import MzPeakDaskError
from ..options import ClusterOptions
from ..support.heap import keep_freed_blocks
from .guarded import Failed, guarded
from .quant_kernels import chromatogram_figures, in_union, match_points, point_figures
from .run_folders import expand_folders
from .runs import Sources, compute, open_each
from .source import Run
from .targets import TargetList, target_list

POINT = (
    "peak_area",
    "peak_n_datapoints",
    "peak_max",
    "peak_min",
    "peak_mean",
    "peak_median",
    "peak_rt_of_max",
    "peak_mass_diff_50pc",
)
CHROMATOGRAM = ("area", "apex_time", "apex_intensity", "spectra")
COLUMNS = ("run", "peak_label", *POINT, *CHROMATOGRAM)
# the targets' arrays a piece uses, in this order (match_points's arguments)
TARGET_ROWS = ("mz_mean", "delta", "rt_min", "rt_max", "threshold")
# a piece's targets: those whose RT window starts among the same GROUP_SPECTRA spectra of a
# run (in time order); it reads them in blocks (archive_run.block_cuts, zarr_run batches)
GROUP_SPECTRA = 2048
# the spectra (about 56 bytes each in the caller's spectrum tables, with the pieces'
# positions) held before the runs opened are quantified, and the most runs opened side by side
# at a time (the first time OPEN_FIRST; then as many as the wave has room for, at the size of
# the runs so far): the caller's memory is a wave's, not the repository's
# (tests/analysis/test_quantify_waves.py)
WAVE_SPECTRA = 2_000_000
OPEN_FIRST, OPEN_MOST = 8, 64


def _figures(count: int, pairs: list[tuple], time: np.ndarray, t: np.ndarray) -> dict:
    """The figures of ``count`` targets (arrays ``t``: rows of :data:`TARGET_ROWS`) from their
    (target, spectrum, m/z, intensity) pairs; ``time``: the spectra the pairs point into."""
    target, spectrum, mz, intensity = (
        np.concatenate([np.zeros(0, dtype), *(p[k] for p in pairs)])
        for k, dtype in enumerate((np.int64, np.int64, np.float64, np.float64))
    )
    out = point_figures(count, target, spectrum, mz, intensity, time, t[0])
    out |= chromatogram_figures(count, target, spectrum, intensity, time, t[2], t[3])
    return out


def _piece(reader, targets: np.ndarray, a: int, b: int, positions, time) -> dict:
    """The figures of targets ``a:b`` (columns of ``targets``, the level's, by ``rt_min``)
    over the spectra at ``positions`` (sorted, times ``time``: every spectrum of their
    windows), read block by block from ``reader``: a block reads the m/z windows of the
    targets whose RT window meets it, and only the matching points are kept."""
    # a piece allocates and frees arrays of a few MB per block: on a Dask worker (whose nanny
    # sets MALLOC_TRIM_THRESHOLD_) each came fresh from the kernel, and a piece took 1.4x the
    # CPU it takes on a thread (tests/benchmarks/bench_quantify.py, 2 workers)
    keep_freed_blocks()
    t = targets[:, a:b]
    low, high = t[0] - t[1], t[0] + t[1]
    pairs = []
    for k in range(reader.blocks):
        span = time[np.searchsorted(positions, reader.positions(k))]
        near = np.flatnonzero((t[2] <= span.max()) & (t[3] >= span.min())) if len(span) else []
        if not len(near):
            continue
        mz, intensity, at = reader.read(k, (low[near], high[near]))
        at = np.searchsorted(positions, at)
        target, point = match_points(mz, intensity, time[at], *t[:, near])
        pairs.append((near[target], at[point], mz[point], intensity[point]))
    return _figures(b - a, pairs, time, t)


def _groups(time: np.ndarray, rt_min: np.ndarray, rt_max: np.ndarray) -> list[tuple]:
    """Targets (sorted by ``rt_min``) cut into runs ``(a, b, positions)``: the targets whose
    window starts among the same ``GROUP_SPECTRA`` spectra (in time order) of ``time``, and
    the positions of the spectra in their windows."""
    edges = np.sort(time)[GROUP_SPECTRA::GROUP_SPECTRA]
    cuts = np.flatnonzero(np.diff(np.searchsorted(edges, rt_min, side="right"))) + 1
    out = []
    for a, b in zip(np.r_[0, cuts].tolist(), np.r_[cuts, len(rt_min)].tolist(), strict=True):
        lo, hi = rt_min[a], rt_max[a:b].max()
        near = (time >= lo) & (time <= hi)
        near[near] = in_union(time[near], rt_min[a:b], rt_max[a:b])
        out.append((a, b, np.flatnonzero(near)))
    return out


def _run_parts(run: Run, levels: dict) -> list[tuple[np.ndarray, Any]]:
    """Per piece of the run: (its targets' numbers in the list, its lazy figures, or the
    figures themselves when no spectrum lies in its targets' windows)."""
    spectra = run.spectra
    times = spectra["time"].to_numpy(dtype=np.float64)
    kinds = spectra["ms_level"].to_numpy()
    out = []
    for level, (which, arrays, shared) in levels.items():
        ids = np.flatnonzero((kinds == level) & in_union(times, arrays[2], arrays[3]))
        time = times[ids]
        groups = _groups(time, arrays[2], arrays[3])
        full = [g for g in groups if len(g[2])]
        windows = [
            (arrays[0, a:b] - arrays[1, a:b], arrays[0, a:b] + arrays[1, a:b]) for a, b, _ in full
        ]
        readers = run.point_readers(ids, [g[2] for g in full], windows) if full else []
        task = delayed(guarded, pure=True)
        lazy = {
            a: task(run.source, _piece, reader, shared, a, b, at, time[at])
            for (a, b, at), reader in zip(full, readers, strict=True)
        }
        for a, b, _ in groups:
            part = lazy.get(a)
            if part is None:
                part = _figures(b - a, [], np.zeros(0), arrays[:, a:b])
            out.append((which[a:b], part))
    return out


def _levels(targets: TargetList) -> dict:
    """Per MS level: the level's targets' numbers in the list, by ``rt_min``, their arrays
    (rows of :data:`TARGET_ROWS`), and those arrays as one key of the graph, shared by every
    piece of every run."""
    out = {}
    for level in np.unique(targets.ms_level).tolist():
        which = np.flatnonzero(targets.ms_level == level)
        which = which[np.argsort(targets.rt_min[which], kind="stable")]
        arrays = np.stack([getattr(targets, name)[which] for name in TARGET_ROWS])
        out[level] = (which, arrays, delayed(arrays, pure=True))
    return out


def _open(sources: list, client: Any, timeout: float) -> tuple[list[Run], list[str]]:
    """The runs of ``sources`` (opened runs pass through; paths opened side by side, on the
    client's workers; a :class:`Failed` is a folder without runs) and a line per source that
    could not be opened."""
    paths = [s for s in sources if not isinstance(s, (Run, Failed))]
    opened = iter(open_each(paths, client, timeout))
    runs: list[Run] = []
    failed: list[str] = []
    for source in sources:
        if isinstance(source, Run):
            runs.append(source)
            continue
        each = source if isinstance(source, Failed) else next(opened)
        if isinstance(each, Failed):
            failed.append(each.message)
        else:
            runs += each
    return runs, failed


def _expanded(sources: list) -> list:
    """``sources`` with folders and prefixes of runs replaced by their runs; one without any,
    or that cannot be listed, is a :class:`Failed`, named beside the table like a run that
    cannot be opened."""
    out: list = []
    for source in sources:
        try:
            out += expand_folders([source])
        except MzPeakDaskError as exc:  # no runs there, or a prefix that cannot be listed
            out.append(Failed(str(exc)))
    return out


def _waves(
    sources: Sources | Run, client: Any, timeout: float
) -> Iterator[tuple[list[Run], list[str]]]:
    """The runs of ``sources`` in waves of about :data:`WAVE_SPECTRA` spectra, with the lines
    of the sources that could not be opened. Runs are opened side by side, as many at a time
    as the wave has room for at the size of the runs opened so far (:data:`OPEN_FIRST` the
    first time, at most :data:`OPEN_MOST`): a wave goes past its spectra by about one run."""
    if isinstance(sources, (str, os.PathLike, Run)):
        sources = [sources]
    sources = _expanded(list(sources))
    runs: list[Run] = []
    failed: list[str] = []
    held, seen, spectra, at, size = 0, 0, 0, 0, OPEN_FIRST
    while at < len(sources):
        opened, lost = _open(sources[at : at + size], client, timeout)
        at += size
        runs, failed = runs + opened, failed + lost
        count = sum(len(run.spectra) for run in opened)
        held, seen, spectra = held + count, seen + len(opened), spectra + count
        if held >= WAVE_SPECTRA:
            yield runs, failed
            runs, failed, held = [], [], 0
        each = max(spectra / seen, 1.0) if seen else WAVE_SPECTRA / OPEN_FIRST
        size = int(min(max((WAVE_SPECTRA - held) / each, 1), OPEN_MOST))
    if runs or failed:
        yield runs, failed


def _rows(run: Run, targets: TargetList, parts: list[tuple[np.ndarray, Any]], results) -> Any:
    """The run's rows, or its :class:`Failed`."""
    table: dict[str, np.ndarray] = {}
    for (which, _), result in zip(parts, results, strict=True):
        if isinstance(result, Failed):
            return result
        for name, values in result.items():
            column = table.setdefault(name, np.zeros(len(targets), values.dtype))
            column[which] = values
    frame = pd.DataFrame({"run": run.source, "peak_label": targets.labels, **table})
    return frame[list(COLUMNS)]


def quantify(
    runs: Sources | Run,
    targets: pd.DataFrame | str | os.PathLike,
    client: Any = None,
    *,
    task_timeout: float = ClusterOptions.task_timeout,
) -> pd.DataFrame:
    """Integrate the MINT target list ``targets`` (a DataFrame or a CSV or Parquet path;
    :mod:`~mzpeak_dask.analysis.targets`) in every run of ``runs`` (paths or URLs of archives
    and Zarr stores, or runs of :func:`open_runs`).

    One row per (run, target), in the order of the runs then of the targets, with the columns
    of :data:`COLUMNS`: ``run`` (where the run was opened from), ``peak_label``, MINT's
    figures over the target's points (``peak_area`` the sum of their intensities,
    ``peak_n_datapoints``, ``peak_max``, ``peak_min``, ``peak_mean``, ``peak_median``,
    ``peak_rt_of_max`` in minutes, first in run order on ties, ``peak_mass_diff_50pc`` the
    median m/z error in ppm; without points 0, 0 and nulls) and the chromatographic view
    (``area``: the trapezoid over minutes of the per-spectrum sums of the points, 0 where a
    spectrum of the window has none; ``apex_time`` and ``apex_intensity``: its maximum;
    ``spectra``: the spectra in the window). A target's points are the points of its MS level's
    spectra with ``rt_min <= time <= rt_max``, ``|m/z - mz_mean| <= mz_mean * mz_width * 1e-6``
    and ``intensity >= intensity_threshold``; points of zero intensity are never counted, even
    at a threshold of 0 (the writer strips runs of zeros from profile spectra and null-marks
    the pairs left: the source's zeros cannot be counted; docs/guide/analysis.md).

    A run that cannot be opened or read is left out and named, one line each, in
    ``result.attrs["failed"]`` (a list, empty when every run was read). On a ``client``, a
    cluster on which no piece ends for ``task_timeout`` seconds stops the call
    (:class:`~mzpeak_dask.errors.ClusterError`)."""
    wanted = target_list(targets)
    levels = _levels(wanted)
    frames: list[pd.DataFrame] = []
    failed: list[str] = []
    for opened, lost in _waves(runs, client, task_timeout):
        failed += lost
        pieces = [_run_parts(run, levels) for run in opened]
        lazy = [part for run in pieces for _, part in run if isinstance(part, Delayed)]
        done = iter(compute(lazy, client, task_timeout))
        for run, parts in zip(opened, pieces, strict=True):
            results = [next(done) if isinstance(p, Delayed) else p for _, p in parts]
            rows = _rows(run, wanted, parts, results)
            if isinstance(rows, Failed):
                failed.append(rows.message)
            else:
                frames.append(rows)
        del opened, pieces, lazy  # the wave's runs and pieces, freed before the next opens
    result = pd.concat(frames, ignore_index=True) if frames else _empty()
    result.attrs["failed"] = failed
    return result


def _empty() -> pd.DataFrame:
    frame = pd.DataFrame({name: pd.Series([], dtype="float64") for name in COLUMNS})
    frame["run"] = frame["run"].astype(object)
    frame["peak_label"] = frame["peak_label"].astype(object)
    for name in ("peak_n_datapoints", "spectra"):
        frame[name] = frame[name].astype("int64")
    return frame


__all__ = ["CHROMATOGRAM", "COLUMNS", "POINT", "quantify"]
