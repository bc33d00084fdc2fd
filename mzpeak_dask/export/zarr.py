"""Export mzPeak archives to a Zarr v3 store whose chunks are the mzPeak chunks.

One group per run (named after the archive's file stem) holds:

* the signal arrays (``mz``, ``intensity``, other arrays snake_case), decoded as
  ``open_archive`` returns them, all spectra in index order, on a **rectilinear** chunk grid
  whose chunks are, one to one and in order, the chunks of the archive's chunked layout (for a
  point archive, the chunks the chunked layout would make with ``chunk_width``; empty mzPeak
  chunks are dropped, as zarr has no zero-length chunks). A spectrum lacking an array has NaN
  (floating arrays) or 0 there;
* per chunk: ``chunk_spectrum_index``, ``chunk_start``, ``chunk_end`` (the first and last
  decoded main-axis value); per spectrum: ``spectrum_offsets`` (n+1), ``time`` (minutes),
  ``ms_level`` (0 when unknown) and ``precursor_mz`` (NaN when none);
* attributes: ``source`` (the archive's path), ``source_sha256``, ``layout``, ``chunk_width``
  and ``arrays`` (Zarr name -> mzPeak array name).

How it runs (all runs side by side on one cluster):

1. **plan** (one task per run, on a worker): a cheap pass gives every chunk's length and the
   per-spectrum metadata (:mod:`.plan`);
2. the coordinator creates the run's group under a temporary name with every array at its full
   rectilinear grid, and cuts the run into blocks of contiguous spectra (``block_points``);
3. **write** (one task per block, on a worker): decode the block's spectra with
   ``SignalReader.read_chunked``, check the chunk lengths against the plan, and write each array
   as one slice spanning whole chunks (spectra start and end on chunk boundaries), so no two
   tasks ever touch the same chunk and no lock is needed; return the chunk bounds;
4. when a run's blocks are in, the coordinator writes ``chunk_start``/``chunk_end`` and the
   attributes, then renames the group into place (replacing an old one only with
   ``overwrite``). On failure the temporary group is deleted.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from .. import vocabulary as V
from ..errors import ArchiveError, InputError, OptionsError, OutputError
from ..options import ClusterOptions, ConvertOptions, ZarrOptions
from ..parallel.executors import Task, open_executor
from ..read.archive import cached_archive
from ..storage.urls import check_writable, is_url, local_path
from ..zarr_runs import FORMAT, PER_SPECTRUM
from ..zarr_runs.chunks import chunk_files
from ..zarr_runs.store import (
    create_point_array,
    enable_rectilinear,
    fill_value,
    open_array,
    open_group,
    write_table_array,
)
from .plan import ArraySpec, RunPlan, plan_run
from .publish import exists, publish, staging_folder, target


@dataclass
class ZarrRunResult:
    """What one run's export produced."""

    archive: str
    group: str
    spectra: int
    chunks: int
    points: int
    source_bytes: int
    seconds: float  # from the start of the export to this run's commit


@dataclass(frozen=True)
class BlockJob:
    """Spectra ``[start, stop)`` of one run, written by one worker task."""

    source: str
    group: str  # folder of the (temporary) run group
    arrays: tuple[ArraySpec, ...]
    start: int
    stop: int
    point_start: int
    first_chunk: int  # the run's index of the block's first chunk
    lengths: np.ndarray  # the planned chunk lengths of these spectra
    width: float


@dataclass
class BlockResult:
    start: int
    chunk_start: np.ndarray
    chunk_end: np.ndarray


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


def _block_values(archive: Any, job: BlockJob) -> tuple[dict[str, list[np.ndarray]], np.ndarray]:
    parts: dict[str, list[np.ndarray]] = {spec.key: [] for spec in job.arrays}
    lengths = []
    for i in range(job.start, job.stop):
        arrays, offsets = spectrum_chunks(archive, i, job.width)
        unknown = set(arrays) - set(parts)
        if unknown:
            raise ArchiveError(f"{job.source}: spectrum {i}: arrays {sorted(unknown)} not planned")
        lengths.append(np.diff(offsets))
        for spec in job.arrays:
            values = arrays.get(spec.key)
            if values is None:
                values = np.full(int(offsets[-1]), fill_value(spec.dtype), dtype=spec.dtype)
            parts[spec.key].append(values)
    return parts, np.concatenate([np.zeros(0, np.int64), *lengths])


def write_block(job: BlockJob) -> BlockResult:
    """Decode a block of spectra and write whole chunks of every array (a worker task)."""
    enable_rectilinear()
    parts, lengths = _block_values(cached_archive(job.source), job)
    if not np.array_equal(lengths, job.lengths):
        raise ArchiveError(
            f"{job.source}: spectra {job.start}-{job.stop - 1}: decoded chunk lengths differ "
            "from the planned grid"
        )
    stop = job.point_start + int(lengths.sum())
    main = None
    for spec in job.arrays:
        values = np.concatenate([np.zeros(0, spec.dtype), *parts[spec.key]]).astype(spec.dtype)
        if main is None:
            main = values
        if stop > job.point_start:
            _write_chunks(Path(job.group) / spec.name, job, stop, values)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    if main is None or not len(lengths):
        empty = np.zeros(0)
        return BlockResult(job.start, empty, empty)
    main = main.astype(np.float64)
    return BlockResult(job.start, np.fmin.reduceat(main, starts), np.fmax.reduceat(main, starts))


def _write_chunks(path: Path, job: BlockJob, stop: int, values: np.ndarray) -> None:
    """Write the block's whole chunks of one array: straight to the chunk objects when the
    array's codecs allow (the arrays :func:`to_zarr` creates always do), else through zarr."""
    files = chunk_files(path)
    if files.direct:
        files.write(job.first_chunk, values)
    else:
        open_array(path, mode="r+")[job.point_start : stop] = values


class RunExport:
    """One run's export on the coordinator: create, collect block results, commit."""

    def __init__(
        self,
        archive: Path,
        store: str,
        name: str,
        width: float,
        overwrite: bool,
        compression: str,
        staging: Path | None = None,
        single_file: bool = False,
    ):
        self.archive, self.store, self.name = archive, store, name
        self.width, self.overwrite, self.compression = width, overwrite, compression
        self.single_file = single_file
        # a local folder store: built beside its final name and renamed; a remote store or a
        # single file: built in ``staging``, then published (export/publish.py)
        self.published = staging is not None
        self.final = Path(store) / name if staging is None else target(store, name, single_file)
        tmp = f".{name}.tmp-{uuid.uuid4().hex[:8]}"
        self.temporary = (Path(store) if staging is None else staging) / tmp
        self.started = time.perf_counter()
        self.plan: RunPlan | None = None
        self.pending = 0
        self.chunk_start = self.chunk_end = np.zeros(0)

    def create(self, plan: RunPlan, block_points: int) -> list[BlockJob]:
        """Create the temporary group with every array at its full grid; the write jobs."""
        self.plan = plan
        group = zarr.open_group(str(self.temporary), mode="w")
        for spec in plan.arrays:
            create_point_array(
                group, spec.name, np.dtype(spec.dtype), plan.chunk_lengths, self.compression
            )
        for name in ("chunk_spectrum_index", *PER_SPECTRUM):  # chunk bounds: at the commit
            write_table_array(group, name, getattr(plan, name))
        n_chunks = len(plan.chunk_lengths)
        self.chunk_start, self.chunk_end = np.full(n_chunks, np.nan), np.full(n_chunks, np.nan)
        jobs = self._jobs(plan, block_points)
        self.pending = len(jobs)
        return jobs

    def _jobs(self, plan: RunPlan, block_points: int) -> list[BlockJob]:
        offsets, first = plan.spectrum_offsets, np.concatenate(([0], np.cumsum(plan.chunk_counts)))
        return [
            BlockJob(
                source=str(self.archive),
                group=str(self.temporary),
                arrays=tuple(plan.arrays),
                start=a,
                stop=b,
                point_start=int(offsets[a]),
                first_chunk=int(first[a]),
                lengths=plan.chunk_lengths[first[a] : first[b]],
                width=self.width,
            )
            for a, b in plan.blocks(block_points)
        ]

    def add(self, result: BlockResult) -> None:
        first = int(np.sum(self.plan.chunk_counts[: result.start]))
        self.chunk_start[first : first + len(result.chunk_start)] = result.chunk_start
        self.chunk_end[first : first + len(result.chunk_end)] = result.chunk_end
        self.pending -= 1

    def commit(self) -> ZarrRunResult:
        plan = self.plan
        group = zarr.open_group(str(self.temporary), mode="r+")
        write_table_array(group, "chunk_start", self.chunk_start)
        write_table_array(group, "chunk_end", self.chunk_end)
        group.attrs.update(self._attributes(plan))
        if self.published:
            publish(self.temporary, self.final, self.single_file, self.overwrite)
            shutil.rmtree(self.temporary, ignore_errors=True)
        else:
            _replace(self.temporary, self.final, self.overwrite)
        return ZarrRunResult(
            archive=str(self.archive),
            group=str(self.final),
            spectra=plan.spectra,
            chunks=len(plan.chunk_lengths),
            points=int(plan.chunk_lengths.sum()),
            source_bytes=plan.source_bytes,
            seconds=time.perf_counter() - self.started,
        )

    def _attributes(self, plan: RunPlan) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "source": str(self.archive.resolve()),
            "source_sha256": plan.sha256,
            "layout": plan.layout,
            "chunk_width": self.width,
            "arrays": {spec.name: spec.key for spec in plan.arrays},
        }

    def abort(self) -> None:
        shutil.rmtree(self.temporary, ignore_errors=True)


def _replace(temporary: Path, final: Path, overwrite: bool) -> None:
    old = None
    if final.exists():
        if not overwrite:
            raise OutputError(f"{final}: appeared during the export; not replaced")
        old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(final, old)
    os.replace(temporary, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


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
                raise OutputError(f"{where}: already exists (use --overwrite to replace it)")
        return
    store = Path(store)
    if store.exists() and not (store / "zarr.json").exists():
        if store.is_file() or any(store.iterdir()):
            raise OutputError(f"{store}: exists and is not a Zarr store")
    for name in names:
        if (store / name).exists() and not overwrite:
            raise OutputError(f"{store / name}: already exists (use --overwrite to replace it)")


def to_zarr(
    archives: list[str | os.PathLike] | str | os.PathLike,
    store: str | os.PathLike,
    *,
    client: Any = None,
    cluster: ClusterOptions | None = None,
    chunk_width: float = ConvertOptions.chunk_width,
    overwrite: bool = ZarrOptions.overwrite,
    compression: str = ZarrOptions.compression,
    block_points: int = ZarrOptions.block_points,
    single_file: bool = ZarrOptions.single_file,
) -> list[ZarrRunResult]:
    """Export archives into ``store`` (a folder, or the URL of a remote store such as
    ``s3://bucket/runs.zarr``), one group per run, in parallel on Dask; with ``single_file``
    each run is one file ``STORE/RUN.zarr.zip`` (a ZIP store) instead.

    ``client`` is a ``distributed.Client`` to run on; otherwise ``cluster`` says which cluster
    to start (a LocalCluster by default; ``ClusterOptions(cluster="inline")`` runs in this
    process). ``chunk_width`` sets the chunks of point-layout archives; ``overwrite``,
    ``compression`` and ``block_points`` are those of :class:`~mzpeak_dask.options.ZarrOptions`.
    Results are in input order. The first failure stops the export: finished runs
    stay, unfinished ones leave nothing.
    """
    if isinstance(archives, (str, os.PathLike)):
        archives = [archives]
    paths = [Path(a) for a in archives]
    if not chunk_width > 0:
        raise OptionsError("chunk_width must be positive")
    ZarrOptions(compression, overwrite, block_points, single_file)  # checks them
    store = str(local_path(store))
    names = run_names(paths)
    _check(paths, store, names, overwrite, single_file)
    enable_rectilinear()
    staged = single_file or is_url(store)
    if is_url(store):
        check_writable(store)
    if not single_file:
        open_group(store, mode="a")
    staging = staging_folder(store) if staged else None
    runs = [
        RunExport(p, store, n, chunk_width, overwrite, compression, staging, single_file)
        for p, n in zip(paths, names, strict=True)
    ]
    try:
        with open_executor(cluster or ClusterOptions(), client) as executor:
            if executor.client is not None:
                executor.client.run(enable_rectilinear)
            return _drive(executor, runs, chunk_width, block_points)
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


def _drive(executor: Any, runs: list[RunExport], width: float, points: int) -> list[ZarrRunResult]:
    """Plan every run, write its blocks as soon as its plan is in, commit finished runs."""
    tasks: list[Task] = [
        executor.submit(("plan", k), plan_run, str(run.archive), width)
        for k, run in enumerate(runs)
    ]
    results: dict[int, ZarrRunResult] = {}
    try:
        while tasks:
            task = executor.next_done(tasks)
            tasks.remove(task)
            kind, k = task.tag
            value = executor.result(task)
            executor.release(task)
            run = runs[k]
            if kind == "plan":
                jobs = run.create(value, points)
                tasks += [executor.submit(("write", k), write_block, job) for job in jobs]
            else:
                run.add(value)
            if run.plan is not None and run.pending == 0:
                results[k] = run.commit()
    except BaseException:
        for task in tasks:
            executor.cancel(task)
        for k, run in enumerate(runs):
            if k not in results:
                run.abort()
        raise
    return [results[k] for k in range(len(runs))]


__all__ = ["BlockJob", "ZarrRunResult", "run_names", "spectrum_chunks", "to_zarr", "write_block"]
