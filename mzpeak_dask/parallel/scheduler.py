"""The coordinator loop: partitions of one or many runs in flight on the cluster, results
assembled in order, with bounded memory.

At most ``window`` partitions are outstanding at any time (running, or finished and waiting in a
run's reorder buffer), so the coordinator and the workers hold a bounded amount of data however
large the inputs. Runs are started as earlier ones stop feeding the window, which makes a batch
parallel across files and within each file. A worker that dies is replaced by Dask, which reruns
its partitions; a partition that fails for a data reason fails its run (and, with ``fail_fast``,
the whole call), and a failed run leaves nothing at its output.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..convert import ConversionResult, Progress, RunJob
from ..encode import encode_partition
from ..errors import ClusterError, MzPeakDaskError
from ..options import ClusterOptions, ConvertOptions
from . import handoff
from .executors import Task, open_executor

log = logging.getLogger(__name__)


@dataclass
class _Active:
    job: RunJob
    handoff: str | None = None  # folder results come back through, when workers see it
    next_partition: int = 0
    buffer: dict[int, Any] = field(default_factory=dict)
    tasks: list[Task] = field(default_factory=list)

    @property
    def submitted_all(self) -> bool:
        return self.next_partition >= len(self.job.plan.partitions)

    @property
    def assembled_all(self) -> bool:
        return self.job.assembler.expected_sequence >= len(self.job.plan.partitions)


def _worker_death(exc: BaseException) -> bool:
    return type(exc).__name__ == "KilledWorker"


def _describe_failure(job: RunJob, task: Task, exc: BaseException) -> MzPeakDaskError:
    if isinstance(exc, MzPeakDaskError):
        return exc
    items = job.plan.partitions[task.tag[1]].items
    kind = "spectra" if items.kind == "spectrum" else "chromatograms"
    where = f"{kind} {items.start}-{items.stop - 1} (0-based)"
    if _worker_death(exc):
        return ClusterError(
            f"{job.source}: {where}: the worker process died repeatedly while "
            f"converting them (the input may crash the decoder)"
        )
    return MzPeakDaskError(f"{job.source}: {where}: {type(exc).__name__}: {exc}")


class Coordinator:
    def __init__(
        self,
        executor: Any,
        options: ConvertOptions,
        cluster: ClusterOptions,
        progress: Progress | None,
        fail_fast: bool,
    ):
        self.executor = executor
        self.options = options
        self.progress = progress
        self.fail_fast = fail_fast
        self.window = cluster.window or 2 * executor.worker_threads + 2
        self.active: list[_Active] = []
        self.outstanding = 0

    def run(self, jobs: list[tuple[Path, Path]]) -> list[ConversionResult | MzPeakDaskError]:
        results: list[Any] = [None] * len(jobs)
        pending = deque(enumerate(jobs))
        try:
            while pending or self.active:
                self._start_jobs(pending, results)
                self._fill_window()
                tasks = [t for a in self.active for t in a.tasks]
                if not tasks:
                    continue
                task = self.executor.next_done(tasks)
                self._collect(task, results)
        except BaseException:
            for active in self.active:
                self._abort(active)
            raise
        return results

    def _start_jobs(self, pending: deque, results: list) -> None:
        while pending and (not self.active or all(a.submitted_all for a in self.active)):
            number, (source, output) = pending.popleft()
            try:
                job = RunJob(source, output, self.options, self.executor.background)
            except MzPeakDaskError as exc:
                if self.fail_fast:
                    raise
                results[number] = exc
                continue
            job.number = number  # type: ignore[attr-defined]
            self.active.append(_Active(job, self.executor.handoff_folder(job.staging.path)))
            self._maybe_finish(self.active[-1], results)

    def _fill_window(self) -> None:
        for active in self.active:
            while not active.submitted_all and self.outstanding < self.window:
                n = active.next_partition
                args = (encode_partition, active.job.plan.partitions[n], active.job.plan.spec)
                if active.handoff:
                    task = self.executor.submit(
                        (active, n), handoff.call_to_file, active.handoff, *args
                    )
                else:
                    task = self.executor.submit((active, n), *args)
                active.tasks.append(task)
                active.next_partition += 1
                self.outstanding += 1

    def _collect(self, task: Task, results: list) -> None:
        active, n = task.tag
        active.tasks.remove(task)
        try:
            result = self.executor.result(task)
            if active.handoff:
                path, result = result, handoff.load(result)
                os.unlink(path)  # the memory map keeps the data until it is written
            active.buffer[n] = result
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            self.outstanding -= 1
            self._fail(active, _describe_failure(active.job, task, exc), results)
            return
        finally:
            self.executor.release(task)
        job = active.job
        while job.assembler.expected_sequence in active.buffer:
            part = active.buffer.pop(job.assembler.expected_sequence)
            job.add(part)
            self.outstanding -= 1
            if self.progress:
                self.progress(str(job.source), job.items_done, job.items_total)
        self._maybe_finish(active, results)

    def _maybe_finish(self, active: _Active, results: list) -> None:
        if not (active.submitted_all and active.assembled_all):
            return
        self.active.remove(active)
        number = active.job.number  # type: ignore[attr-defined]
        try:
            results[number] = active.job.finish()
        except MzPeakDaskError as exc:
            if self.fail_fast:
                raise
            results[number] = exc
        if self.progress:
            self.progress(str(active.job.source), active.job.items_total, active.job.items_total)

    def _fail(self, active: _Active, error: MzPeakDaskError, results: list) -> None:
        self._abort(active)
        self.active.remove(active)
        if self.fail_fast:
            raise error
        results[active.job.number] = error  # type: ignore[attr-defined]

    def _abort(self, active: _Active) -> None:
        for task in active.tasks:
            self.executor.cancel(task)
            self.outstanding -= 1
        self.outstanding -= len(active.buffer)
        active.tasks.clear()
        active.buffer.clear()
        active.job.abort()


def run_jobs(
    jobs: list[tuple[Path, Path]],
    options: ConvertOptions,
    cluster: ClusterOptions,
    client: Any,
    progress: Progress | None,
    fail_fast: bool,
) -> list[ConversionResult | MzPeakDaskError]:
    with open_executor(cluster, client) as executor:
        if executor.dashboard_link:
            log.info("Dask dashboard: %s", executor.dashboard_link)
            announce = getattr(progress, "announce", None)
            if announce is not None:
                announce(f"Dask dashboard: {executor.dashboard_link}")
        return Coordinator(executor, options, cluster, progress, fail_fast).run(jobs)
