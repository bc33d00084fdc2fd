"""Export mzPeak archives to a Zarr v3 store, one group per run, in chunks of many mzPeak
chunks that still mirror them.

One group per run (named after the archive's file stem) holds:

* the signal arrays (``mz``, ``intensity``, other arrays snake_case), decoded as
  ``open_archive`` returns them, all spectra in index order, on a **rectilinear** chunk grid
  that coarsens the mzPeak chunking: each Zarr chunk is a run of consecutive whole spectra,
  hence of whole mzPeak chunks (those of the archive's chunked layout; for a point archive,
  those the chunked layout would make with ``chunk_width``; empty ones dropped), of about
  ``chunk_points`` points. A spectrum lacking an array has NaN (floating arrays) or 0 there;
* each Zarr chunk object of a signal array is the concatenation of **one Zstandard frame per
  mzPeak chunk** (with ``compression="none"``, of their plain bytes): zarr-python reads it as
  the chunk it is (concatenated frames decode to the concatenated values), and a reader that
  knows the frames reads only the byte ranges of the mzPeak chunks it needs;
* per mzPeak chunk: ``chunk_lengths`` (points), ``chunk_spectrum_index``, ``chunk_start``,
  ``chunk_end`` (the smallest and largest decoded main-axis value) and ``chunk_frame_bytes``
  (per signal array, in the order of the ``arrays`` attribute, the size of each chunk's
  frame), each stored as one Zstandard frame per Zarr chunk of the signal arrays (the entries
  of its mzPeak chunks), the frames concatenated into chunks of up to 4 M values; per Zarr
  chunk: ``zarr_chunk_first`` (its first mzPeak chunk, Zarr chunks + 1 values) and
  ``zarr_chunk_table_bytes`` (the size of its frame in each of those tables), so a reader
  inflates only the entries of the Zarr chunks a query reads; per spectrum:
  ``spectrum_offsets`` (n+1), ``time`` (minutes),
  ``ms_level`` (0 when unknown) and ``precursor_mz`` (NaN when none); per Zarr chunk:
  ``zarr_chunk_mz_min``/``_max`` and ``zarr_chunk_time_min``/``_max``, the ranges a reader
  prunes whole Zarr chunks with;
* attributes: ``format``, ``source`` (the archive's path), ``source_sha256``, ``layout``,
  ``chunk_width``, ``chunk_points`` and ``arrays`` (Zarr name -> mzPeak array name).

Why this layout and not Zarr's sharding codec (measured; docs/zarr-layout.md): a shard's inner
chunks must be regular, so they cannot follow mzPeak chunks or spectra; frames give the same
partial reads (a byte range per mzPeak chunk) with chunk boundaries that do, and a run of
65 M points is some 80 files instead of millions.

How it runs (all runs side by side on one executor; the coordinator never decodes):

1. **survey** (one task per run, on a worker): the archive's footers give each spectrum's
   estimated points, which cut the run into spectrum ranges, one per Zarr chunk
   (:mod:`.plan`); the archive's SHA-256 is another task;
2. **write** (one task per range, :mod:`.writes`): decode the spectra, cut them into mzPeak
   chunks, and write one chunk object per signal array straight to the run's destination
   (:mod:`.publish`), or return the objects where the workers cannot see a local
   destination, for the coordinator to write; return the chunk lengths, bounds and frame
   sizes;
3. as results come back the coordinator gives each chunk its key (a single file appends it to
   the ZIP at once); when a run's tasks are in, it writes the metadata and the tables and
   makes the run visible (replacing an old one only with ``overwrite``). On failure or
   interruption everything the run wrote is deleted, once the write tasks have stopped: those
   not started are cancelled (or, given the stop flag, write nothing), the running ones are
   waited for (:data:`STOP_SECONDS` at most), so that none writes after the clean-up.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from ..errors import InputError, OptionsError, OutputError, OutputExistsError, StorageError
from ..options import ClusterOptions, ConvertOptions, ZarrOptions
from ..parallel.executors import Task, open_executor
from ..storage.probe import probe_output
from ..storage.urls import is_url, local_path
from ..zarr_runs import (
    CHUNK_LENGTHS,
    CHUNK_TABLES,
    FORMAT,
    FRAME_BYTES,
    TABLE_BYTES,
    ZARR_CHUNK_FIRST,
)
from ..zarr_runs.store import (
    create_point_array,
    enable_rectilinear,
    open_group,
    write_framed_table,
    write_table_array,
)
from . import stopping
from .plan import RunSurvey, archive_sha256, survey_run
from .publish import (
    Sink,
    exists,
    open_sink,
    put_object,
    reported,
    staging_folder,
    sweep_remote,
    target,
    work_key,
)
from .writes import ChunkJob, ChunkResult, write_chunk

STOP_SECONDS = 300.0  # a failed export waits this long at most for its running write tasks
_log = logging.getLogger(__name__)


@dataclass
class ZarrRunResult:
    """What one run's export produced."""

    archive: str
    group: str
    spectra: int
    chunks: int  # mzPeak chunks
    zarr_chunks: int  # Zarr chunks of each signal array
    points: int
    source_bytes: int
    seconds: float  # from the start of the export to this run's commit


@dataclass
class RunExport:
    """One run's export on the coordinator: survey, write jobs, results, commit."""

    archive: Path
    store: str
    name: str
    width: float
    compression: str
    chunk_points: int
    single_file: bool
    staging: Path | None
    started: float = field(default_factory=time.perf_counter)
    sink: Sink | None = None
    returned: bool = False  # the workers cannot see the work folder: they return the chunks
    survey: RunSurvey | None = None
    sha256: str | None = None
    results: dict[int, ChunkResult] = field(default_factory=dict)
    jobs: int = 0
    placed: int = 0  # results given their final keys (in task order)
    grid: list[int] = field(default_factory=list)  # points of each Zarr chunk so far

    @property
    def final(self) -> str:
        return target(self.store, self.name, self.single_file)

    def open(self, executor: Any) -> None:
        """Open the run's destination; its chunks come back to this process where the
        workers of ``executor`` cannot see a local one."""
        self.sink = open_sink(self.store, self.name, self.single_file, self.staging)
        work = self.sink.work
        self.returned = not is_url(work) and not executor.workers_see(Path(work))

    def surveyed(self, survey: RunSurvey, flag: str | None) -> list[ChunkJob]:
        """The write jobs of the run, one per Zarr chunk, given the export's stop flag."""
        self.survey = survey
        jobs = [
            ChunkJob(
                source=str(self.archive),
                store=self.store,
                name=self.name,
                work=None if self.returned else self.sink.work,
                task=k,
                arrays=tuple(survey.arrays),
                start=a,
                stop=b,
                width=self.width,
                compression=self.compression,
                flag=flag,
            )
            for k, (a, b) in enumerate(survey.ranges(self.chunk_points))
        ]
        self.jobs = len(jobs)
        return jobs

    def add(self, result: ChunkResult) -> None:
        """A write task's result; the chunks of consecutive finished tasks get their keys."""
        for key, data in (result.objects or {}).items():  # written here, then let go
            put_object(self.sink.work, key, data)
        self.results[result.task] = replace(result, objects=None)
        while self.placed in self.results:
            done = self.results[self.placed]
            if done.points:
                k = len(self.grid)
                self.grid.append(done.points)
                self.sink.arrived(
                    [(work_key(s.name, done.task), f"{s.name}/c/{k}") for s in self.survey.arrays]
                )
            self.placed += 1

    @property
    def complete(self) -> bool:
        return self.survey is not None and self.sha256 is not None and self.placed == self.jobs

    def commit(self, overwrite: bool) -> ZarrRunResult:
        survey = self.survey
        parts = [self.results[k] for k in range(self.jobs)]
        kept = [p for p in parts if p.points]  # one per Zarr chunk
        lengths = _joined([p.lengths for p in parts], np.int64)
        owners = _joined([p.spectrum for p in parts], np.int64)
        per_spectrum = np.bincount(owners, weights=lengths, minlength=survey.spectra)
        spectrum_offsets = np.concatenate(([0], np.cumsum(per_spectrum))).astype(np.int64)
        counts = np.array([len(p.lengths) for p in kept], dtype=np.int64)
        first = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        group = zarr.open_group(str(self.sink.meta), mode="a")
        for spec in survey.arrays:
            create_point_array(group, spec.name, np.dtype(spec.dtype), self.grid, self.compression)
        blocks = {
            CHUNK_LENGTHS: ([p.lengths for p in kept], np.int64),
            "chunk_spectrum_index": ([p.spectrum for p in kept], np.int64),
            "chunk_start": ([p.chunk_start for p in kept], np.float64),
            "chunk_end": ([p.chunk_end for p in kept], np.float64),
            FRAME_BYTES: ([p.frames.ravel() for p in kept], np.int64),
        }
        table_bytes = [
            write_framed_table(group, Path(self.sink.meta), name, *blocks[name])
            for name in CHUNK_TABLES
        ]
        tables = {
            "spectrum_offsets": spectrum_offsets,
            "time": survey.time,
            "ms_level": survey.ms_level,
            "precursor_mz": survey.precursor_mz,
            **_zarr_chunk_ranges(parts, survey.time),
            ZARR_CHUNK_FIRST: first,
            TABLE_BYTES: np.concatenate([np.zeros(0, np.int64), *table_bytes]),
        }
        for name, values in tables.items():
            write_table_array(group, name, values)
        group.attrs.update(self._attributes())
        with reported(self.store, [self.name]):
            self.sink.commit(overwrite)
        return ZarrRunResult(
            archive=str(self.archive),
            group=str(self.final),
            spectra=survey.spectra,
            chunks=len(lengths),
            zarr_chunks=len(self.grid),
            points=int(spectrum_offsets[-1]),
            source_bytes=survey.source_bytes,
            seconds=time.perf_counter() - self.started,
        )

    def _attributes(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "source": str(self.archive.resolve()),
            "source_sha256": self.sha256,
            "layout": self.survey.layout,
            "chunk_width": self.width,
            "chunk_points": self.chunk_points,
            "arrays": {spec.name: spec.key for spec in self.survey.arrays},
        }

    def abort(self) -> list[str]:
        """Remove what the run wrote; the locations that could not be removed."""
        return self.sink.abort() if self.sink is not None else []


def _joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate([np.zeros(0, dtype), *parts]).astype(dtype)


def _zarr_chunk_ranges(parts: list[ChunkResult], time: np.ndarray) -> dict[str, np.ndarray]:
    """Per Zarr chunk (the tasks that wrote points): min and max main-axis value and time."""
    kept = [p for p in parts if p.points]
    out = {
        "zarr_chunk_mz_min": [_nan_extreme(np.fmin, p.chunk_start) for p in kept],
        "zarr_chunk_mz_max": [_nan_extreme(np.fmax, p.chunk_end) for p in kept],
        "zarr_chunk_time_min": [_nan_extreme(np.fmin, time[np.unique(p.spectrum)]) for p in kept],
        "zarr_chunk_time_max": [_nan_extreme(np.fmax, time[np.unique(p.spectrum)]) for p in kept],
    }
    return {name: np.asarray(values, dtype=np.float64) for name, values in out.items()}


def _nan_extreme(reduce: Any, values: np.ndarray) -> float:
    """``reduce`` over ``values`` ignoring NaN; NaN when all are."""
    return float(reduce.reduce(values)) if len(values) else float("nan")


def run_names(archives: list[Path]) -> list[str]:
    """Group names: each archive's file stem (``run.mzpeak`` -> ``run``); must be unique."""
    names = [p.stem for p in archives]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise OptionsError(f"several archives would export to the same group: {repeated}")
    return names


def _check(
    archives: list[Path], store: str, names: list[str], overwrite: bool, single_file: bool
) -> None:
    for archive in archives:
        if not archive.exists():
            raise InputError(f"{archive}: no such archive")
        if not (archive.is_file() or archive.is_dir()):  # a FIFO would be waited on
            raise InputError(f"{archive}: not a regular file, not an archive")
    if single_file or is_url(store):
        for name in names:
            if exists(target(store, name, single_file), single_file) and not overwrite:
                where = target(store, name, single_file)
                raise OutputExistsError(where)
        return
    store = Path(store)
    if store.exists() and not (store / "zarr.json").exists():
        if store.is_file() or any(store.iterdir()):
            raise OutputError(f"{store}: exists and is not a Zarr store")
    for name in names:
        if (store / name).exists() and not overwrite:
            raise OutputExistsError(store / name)


def to_zarr(
    archives: list[str | os.PathLike] | str | os.PathLike,
    store: str | os.PathLike,
    *,
    client: Any = None,
    cluster: ClusterOptions | None = None,
    chunk_width: float = ConvertOptions.chunk_width,
    overwrite: bool = ZarrOptions.overwrite,
    compression: str = ZarrOptions.compression,
    chunk_points: int = ZarrOptions.zarr_chunk_points,
    single_file: bool = ZarrOptions.single_file,
) -> list[ZarrRunResult]:
    """Export archives into ``store`` (a folder, or the URL of a remote store such as
    ``s3://bucket/runs.zarr``), one group per run, in parallel; with ``single_file`` each run
    is one file ``STORE/RUN.zarr.zip`` (a ZIP store) instead.

    ``client`` is a ``distributed.Client`` to run on; otherwise ``cluster`` says which cluster
    to start (a LocalCluster by default; ``ClusterOptions(cluster="inline")`` runs in this
    process). ``chunk_width`` sets the mzPeak chunks of point-layout archives; ``chunk_points``
    the points of a Zarr chunk (about; a big run's chunks are bigger, see
    :func:`~mzpeak_dask.export.plan.chunk_target`); ``overwrite`` and ``compression`` are those
    of :class:`~mzpeak_dask.options.ZarrOptions`. Results are in input order. The first
    failure stops the export: finished runs stay, unfinished ones leave nothing.
    """
    if isinstance(archives, (str, os.PathLike)):
        archives = [archives]
    paths = [Path(a) for a in archives]
    if not chunk_width > 0:
        raise OptionsError("chunk_width must be positive")
    ZarrOptions(compression, overwrite, chunk_points, single_file)  # checks them
    store = str(local_path(store))
    names = run_names(paths)
    with reported(store, names):  # before any work: no bucket, refused, no answer
        if is_url(store):
            probe_output(store)
            sweep_remote(store)  # what killed exports left: before the runs are checked
        _check(paths, store, names, overwrite, single_file)
        enable_rectilinear()
        if not single_file:
            open_group(store, mode="a")
    staged = single_file or is_url(store)
    staging = staging_folder(store) if staged else None
    runs = [
        RunExport(p, store, n, chunk_width, compression, chunk_points, single_file, staging)
        for p, n in zip(paths, names, strict=True)
    ]
    try:
        with open_executor(cluster or ClusterOptions(), client) as executor:
            return _drive(executor, runs, overwrite)
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


def _drive(executor: Any, runs: list[RunExport], overwrite: bool) -> list[ZarrRunResult]:
    """Survey every run, write its chunks as soon as its survey is in, commit finished runs."""
    tasks: list[Task] = []
    results: dict[int, ZarrRunResult] = {}
    flag = stopping.new_flag(executor)
    try:
        for k, run in enumerate(runs):
            run.open(executor)
            tasks.append(executor.submit(("survey", k), survey_run, str(run.archive)))
            tasks.append(executor.submit(("sha256", k), archive_sha256, str(run.archive)))
        while tasks:
            task = executor.next_done(tasks)
            tasks.remove(task)
            kind, k = task.tag
            value = executor.result(task)
            executor.release(task)
            run = runs[k]
            if kind == "survey":
                jobs = run.surveyed(value, flag)
                tasks += [executor.submit(("write", k), write_chunk, job) for job in jobs]
            elif kind == "sha256":
                run.sha256 = value
            else:
                run.add(value)
            if run.complete:
                results[k] = run.commit(overwrite)
    except BaseException as exc:
        _stop(executor, flag, tasks, runs, results, exc)
        raise
    finally:
        stopping.forget(executor, flag)
    return [results[k] for k in range(len(runs))]


def _stop(
    executor: Any,
    flag: str | None,
    tasks: list[Task],
    runs: list[RunExport],
    results: dict[int, ZarrRunResult],
    exc: BaseException,
) -> None:
    """After a failure: end the tasks (the write tasks running are waited for, so that none
    writes after the clean-up), then remove what the unfinished runs wrote. What is left in
    the store is named: in the StorageError that ``exc`` becomes, else in a logged warning."""
    writes = [t for t in tasks if t.tag[0] == "write"]
    for task in tasks:
        if task not in writes:
            executor.cancel(task)
    seconds = min(STOP_SECONDS, getattr(executor, "task_timeout", STOP_SECONDS))
    running = {t.tag[1] for t in stopping.stop(executor, flag, writes, seconds)}
    left = []
    for k, run in enumerate(runs):
        if k in results:
            continue
        left += run.abort()
        if k in running and run.sink is not None:
            left.append(f"{run.sink.work} (write tasks still running after {seconds:g} s)")
    if not left:
        return
    if isinstance(exc, StorageError):
        raise StorageError(
            f"{exc}; left in the store (hidden from readers): {', '.join(left)}"
        ) from None
    _log.warning("left in the store (hidden from readers): %s", ", ".join(left))


__all__ = ["ZarrRunResult", "run_names", "to_zarr"]
