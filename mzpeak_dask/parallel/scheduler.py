"""The coordinator loop: runs planned and converted on the cluster, assembled in order, with
bounded memory.

Each run is first planned by a task (survey, decompression, data columns — on a worker when
the workers see the staging folder, else here), then each partition is encoded and written as
finished Parquet parts by tasks (:mod:`mzpeak_dask.archive.parts`).

- **Workers see the staging folder** (the usual case): one task encodes and writes each
  partition, with offsets guessed from the plan and checked (:mod:`.offsets`); the parts stay
  there, and one last task finishes the run on a worker (:mod:`.finish`: the members, the
  container and, for a batch, its checks). The coordinator only renames the archive into
  place. When the plan expects its guesses to be right (no UV spectra in its sample), all of
  the run's partitions and its finishing task go out at once, and the partitions' results
  pass from worker to worker to that task: the coordinator sends one message for them and
  collects one result, the finished run's. That task checks the offsets; if some are wrong
  after all (UV spectra the sample missed), it sends the run back (:class:`~.finish.Rewrite`)
  and the run goes on as below. Otherwise partitions go out as the window allows, and their
  counts come back here to be checked (those written with a wrong guess written again).
- **A small run** (no kind of item with more than one partition: most files of a repository)
  is planned, converted and finished by its plan's task alone; while many runs wait,
  consecutive small files share that task (as many as :mod:`.packs` lets one task hold),
  which divides the cluster's cost per task between them. Each is still recorded, reported
  and failed on its own, and the runs of a task lost with its worker each get a task of
  their own.
- **Workers cannot see it**: the parts come back as bytes no larger than their share of the
  archive and are stitched here, copied, in order.

Partitions go out while fewer than ``window`` tasks are outstanding (running, or finished and
waiting in a run's reorder buffer), so the coordinator and the workers hold a bounded amount
of data however large and many the inputs (a run submitted at once holds, until it is
finished, a path and a few counts a partition). A new run starts whenever no started run has
partitions waiting to be submitted and the window has room, which keeps the window full with
many small files and makes a batch parallel across files and within each file.

A worker that dies is replaced by Dask, which reruns its tasks; a task that fails for a data
reason fails its run (and, with ``fail_fast``, the whole call); a failed run leaves nothing at
its output. ``on_result`` hears about every run as soon as it ends, so a batch can record it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..archive.container import Inputs
from ..archive.job import RunJob
from ..archive.parts import next_offsets, write_partition
from ..archive.staging import remove_held, sweep_outputs
from ..contracts import ConversionResult, Progress
from ..encode import encode_partition
from ..errors import MzPeakDaskError
from ..options import ClusterOptions, ConvertOptions
from ..partition import Reads, plan_run
from ..storage.urls import is_url
from .executors import Task, open_executor
from .failures import CONVERT, FINISH, METADATA, PACK, PLAN, SIGNAL, WRITE, describe_failure
from .finish import (
    FinishedRun,
    Rewrite,
    build_metadata,
    convert_each,
    encode_to_file,
    finish_run,
    finish_written,
    plan_or_finish,
    stitch_signal,
)
from .offsets import Offsets
from .packs import Room

log = logging.getLogger(__name__)
OnResult = Callable[[int, "ConversionResult | MzPeakDaskError"], None]


@dataclass
class _Active:
    job: RunJob
    number: int
    handoff: str | None = None  # the staging folder, when workers see it: they finish the run
    next_partition: int = 0
    buffer: dict[int, Any] = field(default_factory=dict)
    tasks: list[Task] = field(default_factory=list)
    # the first steps of partitions in flight (encoded, offsets), held until written
    steps: dict[int, tuple[Task, Any]] = field(default_factory=dict)
    chain: tuple[Task, Any] | None = None  # the last partition's steps: the next one's offsets
    finishing: bool = False  # the task finishing the run on a worker was submitted
    offsets: Offsets | None = None  # a run finished on a worker: its partitions' offsets
    pack: list[_Active] = field(default_factory=list)  # the runs of its PACK task (the first's)
    with_plan: frozenset[int] = frozenset()  # partitions its plan's task wrote (no task here)
    at_once: bool = False  # its partitions and its finishing task were submitted together
    hashing_on: str | None = None  # the worker its plan's task left hashing its input

    @property
    def remote(self) -> bool:
        """A worker finishes this run (its buffer holds the paths of written partitions)."""
        return self.handoff is not None

    @property
    def planned(self) -> bool:
        return self.job.plan is not None

    @property
    def submitted_all(self) -> bool:
        return self.planned and self.next_partition >= len(self.job.plan.partitions)

    @property
    def assembled_all(self) -> bool:
        if self.remote:
            return len(self.buffer) >= len(self.job.plan.partitions)
        return self.job.expected_sequence >= len(self.job.plan.partitions)


class Coordinator:
    def __init__(
        self,
        executor: Any,
        options: ConvertOptions,
        cluster: ClusterOptions,
        progress: Progress | None,
        fail_fast: bool,
        on_result: OnResult | None,
        check: bool = False,
    ):
        """``check``: runs finished on workers also check their archive (see
        :mod:`.finish`), for a batch to record."""
        self.executor = executor
        self.check = check
        self.options = options
        self.progress = progress
        self.fail_fast = fail_fast
        self.on_result = on_result
        self.threads = executor.worker_threads
        self.window = cluster.window or 2 * self.threads + 2
        self.active: list[_Active] = []
        self.outstanding = 0

    def run(self, jobs: list[tuple[Path, Path]]) -> list[ConversionResult | MzPeakDaskError]:
        results: list[Any] = [None] * len(jobs)
        self.inputs = Inputs(source for source, _ in jobs)  # no output may overwrite one
        sweep_outputs(output for _, output in jobs)  # what conversions that died left for them
        self._probe_once([output for _, output in jobs])
        pending = deque(enumerate(jobs))
        try:
            while pending or self.active:
                self._start_jobs(pending, results)
                self._fill_window()
                tasks = [t for a in self.active for t in a.tasks]
                if tasks:
                    self._collect(self.executor.next_done(tasks), results)
        except BaseException:
            try:
                for active in list(self.active):
                    with contextlib.suppress(Exception):  # each run's, whatever the others do
                        self._abort(active)
            finally:  # whatever a run left (it never ended): nothing stays beside the outputs
                remove_held(output for _, output in jobs)
            raise
        return results

    def _probe_once(self, outputs: list[Path]) -> None:
        """Outputs in several folders: whether the workers see the folder holding them all,
        probed first, answers for each of them on the same file system (a probe per folder
        is a round trip to every worker; a repository has thousands of folders)."""
        folders = {os.path.dirname(os.path.abspath(o)) for o in outputs if not is_url(str(o))}
        if len(folders) > 1:
            self.executor.workers_see(Path(os.path.commonpath(sorted(folders))))

    def _ready_for_more(self) -> bool:
        busy = any(a.planned and not a.submitted_all for a in self.active)
        return not busy and self.outstanding < self.window

    def _start_jobs(self, pending: deque, results: list) -> None:
        """Start runs while the window has room: each planned by a task on a worker (which
        converts it whole if it is small), consecutive small files several to a task (as
        :class:`~.packs.Room` allows); or planned here when the workers cannot see the
        staging folder."""
        while pending and (not self.active or self._ready_for_more()):
            room = Room.now(len(pending), self.threads, self.options.partition_bytes)
            pack: list[_Active] = []
            held = 0
            while pending:
                size = self._small_size(pending[0][1][0])
                if not room.takes(len(pack), held, size):
                    break
                number, (source, output) = pending.popleft()
                active = self._open(number, source, output, results)
                if active is None:
                    continue
                if active.handoff is None:  # workers cannot see the staging folder: plan here
                    self._plan_here(active, results)
                    continue
                pack.append(active)
                if size is None:
                    break
                held += size
            if len(pack) > 1:
                self._submit_pack(pack)
            elif pack:
                self._submit_plan(pack[0])

    def _small_size(self, source: Path) -> int | None:
        """The size of a local input no larger than a partition (most likely converted by its
        plan's task), else None: as :class:`~mzpeak_dask.archive.container.Inputs` found it
        when the run began (one ``stat`` an input, however often a pack looks at it)."""
        size = None if is_url(str(source)) else self.inputs.size(source)
        return size if size is not None and size <= self.options.partition_bytes else None

    def _open(self, number: int, source: Path, output: Path, results: list) -> _Active | None:
        try:
            job = RunJob(source, output, self.options, self.inputs)
        except MzPeakDaskError as exc:
            self._record(number, exc, results)
            return None
        try:  # probing the workers takes a while: an interrupt here must not leak staging
            active = _Active(job, number, self.executor.handoff_folder(job.staging.path))
        except BaseException:
            job.abort()
            raise
        self.active.append(active)
        return active

    def _plan_here(self, active: _Active, results: list) -> None:
        job = active.job
        try:
            reads: Reads = "here" if self.executor.runs_here else "elsewhere"
            plan = plan_run(job.source, job.staging.path, self.options, reads)
        except Exception as exc:  # noqa: BLE001 - one run's failure, never the whole call
            self._fail(active, describe_failure(job, PLAN, exc), results)
            return
        self._planned(active, plan, results)

    def _submit_plan(self, active: _Active) -> None:
        """The task planning the run on a worker, which converts it whole if it is small."""
        job = active.job
        task = self.executor.submit(
            (active, PLAN),
            plan_or_finish,
            str(job.source),
            str(job.output),
            self.options,
            active.handoff,
            self.check,
        )
        active.tasks.append(task)
        self.outstanding += 1

    def _submit_pack(self, pack: list[_Active]) -> None:
        """One task planning (converting the small ones) the runs of ``pack`` in turn."""
        runs = [(str(a.job.source), str(a.job.output), a.handoff) for a in pack]
        leader = pack[0]
        leader.pack = pack
        task = self.executor.submit((leader, PACK), convert_each, runs, self.options, self.check)
        leader.tasks.append(task)
        self.outstanding += 1

    def _plan_outcome(self, active: _Active, outcome: Any, results: list) -> None:
        """What a run's plan task gave: the run converted whole (a small run), its plan with
        the partitions written beside it (:class:`~.finish.PlannedRun`), or (from a PACK task,
        which returns each run's failure in its place) an exception."""
        if isinstance(outcome, FinishedRun):
            active.job.items_total = outcome.items
            self._finished(active, outcome.result, outcome.archive, outcome.inspection, results)
        elif isinstance(outcome, BaseException):
            self._fail(active, describe_failure(active.job, CONVERT, outcome), results)
        else:
            active.hashing_on = outcome.hashing_on
            self._planned(active, outcome.plan, results, outcome.written)

    def _fill_window(self) -> None:
        for active in self.active:
            if active.planned and not active.submitted_all and self._all_at_once(active):
                self._submit_run(active)
            while active.planned and not active.submitted_all and self.outstanding < self.window:
                self._submit_partition(active)

    @staticmethod
    def _all_at_once(active: _Active) -> bool:
        """A run finished on a worker whose plan's offsets are expected to be right: nothing
        of it need come back here before it is finished (see :meth:`_submit_run`)."""
        return active.remote and active.offsets.surely_right

    def _submit_run(self, active: _Active) -> None:
        """A run's partitions, all at once (one message to the scheduler), each written with
        the offsets its plan gives, and the task finishing the run after them, which checks
        those offsets (:func:`~.finish.finish_written`). Their results go from worker to
        worker, to that task: none is collected here, where a finished partition only counts
        for progress. The window does not hold them back: what each leaves on the workers
        until the run is finished is a path and a few counts."""
        plan = active.job.plan
        todo = range(active.next_partition, len(plan.partitions))
        todo = [n for n in todo if n not in active.with_plan]
        calls = [
            (active.handoff, plan.partitions[n], plan.spec, active.offsets.guess(n)) for n in todo
        ]
        tasks = self.executor.submit_many([(active, n) for n in todo], encode_to_file, calls)
        active.at_once = True
        active.tasks += tasks
        active.next_partition = len(plan.partitions)
        self.outstanding += len(tasks)
        pending = dict(zip(todo, tasks, strict=True))
        written = [
            pending.get(n) or (active.buffer[n], 0, active.offsets.counts[n])
            for n in range(len(plan.partitions))
        ]
        used = [active.offsets.used[n] for n in range(len(plan.partitions))]
        self._submit_halves(active, written, used)

    def _submit_partition(self, active: _Active) -> None:
        active.tasks.append(self._partition_task(active, active.next_partition))
        active.next_partition += 1
        self._skip_written(active)
        self.outstanding += 1

    @staticmethod
    def _skip_written(active: _Active) -> None:
        """On past the partitions the run's plan task wrote."""
        while active.next_partition in active.with_plan:
            active.next_partition += 1

    def _partition_task(self, active: _Active, n: int) -> Task:
        """Partition ``n``'s steps (see :mod:`mzpeak_dask.archive.parts`): encode, its offsets
        from the previous partition's, then its Parquet parts, the only result collected. A run
        finished on a worker takes one task a partition instead, with the offsets its plan
        gives (:mod:`.offsets`)."""
        plan = active.job.plan
        if active.remote:
            return self._encode_to_file(active, n, active.offsets.guess(n))
        encoded = self.executor.submit(None, encode_partition, plan.partitions[n], plan.spec)
        offsets: Any = {}
        if active.chain is not None:
            offsets = self.executor.submit(None, next_offsets, *reversed(active.chain))
        task = self.executor.submit((active, n), write_partition, encoded, offsets, plan.spec)
        active.steps[n] = active.chain = (encoded, offsets)
        return task

    def _encode_to_file(self, active: _Active, n: int, offsets: dict[str, int]) -> Task:
        plan = active.job.plan
        return self.executor.submit(
            (active, n), encode_to_file, active.handoff, plan.partitions[n], plan.spec, offsets
        )

    def _collect(self, task: Task, results: list) -> None:
        active, n = task.tag
        active.tasks.remove(task)
        self.outstanding -= 1
        partition_at_once = active.at_once and n >= 0
        half = n in (SIGNAL, METADATA)
        result: Any = None
        try:
            if partition_at_once or half:  # its result went to the task finishing the run
                self.executor.settle(task)
            else:
                result = self.executor.result(task)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            if n == PACK:  # e.g. a worker died under it: each run on its own, to fail alone
                for member in active.pack:
                    self._submit_plan(member)
                return
            where = CONVERT if n == PLAN and active.remote else FINISH if half else n
            if where == FINISH and active.at_once:  # failed with a partition: it is named
                failed = (
                    t.tag[1] for t in active.tasks if t.tag[1] >= 0 and self.executor.failed(t)
                )
                where = next(failed, where)
            self._fail(active, describe_failure(active.job, where, exc), results)
            return
        finally:
            self.executor.release(task)
            active.steps.pop(n, None)  # dropped: Dask frees them once nothing needs them
        if n == PACK:  # each run as if its own plan task had given its outcome
            for member, outcome in zip(active.pack, result, strict=True):
                self._plan_outcome(member, outcome, results)
            return
        if n == PLAN:
            self._plan_outcome(active, result, results)
            return
        if n == FINISH:
            if isinstance(result, Rewrite):
                self._rewrite(active, result.written)
            else:
                self._finished(active, *result, results)
            return
        if half:
            return
        if partition_at_once:
            self._progress(active, len(active.job.plan.partitions[n].items))
            return
        if active.remote:  # a path in the staging folder, its number of items, their counts
            self._written(active, n, *result)
            self._maybe_finish(active, results)
            return
        self.outstanding += 1  # held in the reorder buffer until assembled
        active.buffer[n] = result
        job = active.job
        while job.expected_sequence in active.buffer:
            try:
                job.add(active.buffer.pop(job.expected_sequence))
            except Exception as exc:  # noqa: BLE001 - e.g. a full disk: this run fails
                self.outstanding -= 1
                self._fail(active, describe_failure(job, WRITE, exc), results)
                return
            self.outstanding -= 1
            if self.progress:
                self.progress(str(job.source), job.items_done, job.items_total)
        self._maybe_finish(active, results)

    def _written(
        self, active: _Active, n: int, path: str, items: int, counts: dict[str, int]
    ) -> None:
        """Partition ``n`` of a run finished on a worker is written: its file, its number of
        items and their counts, which check the offsets of the partitions written so far."""
        active.buffer[n] = path
        if items and n not in active.offsets.counts:  # not a partition written again
            self._progress(active, items)
        for k, offsets in active.offsets.arrived(n, counts):  # written with a wrong guess
            del active.buffer[k]
            active.tasks.append(self._encode_to_file(active, k, offsets))
            self.outstanding += 1

    def _rewrite(self, active: _Active, written: list[tuple[str, int, dict[str, int]]]) -> None:
        """A run that went out at once had partitions written with a wrong guess (its
        finishing task found them, see :class:`~.finish.Rewrite`): it goes on as a run
        checked here, those partitions written again side by side with the true offsets, and
        finished once they are (:meth:`_written`; progress counted them already)."""
        active.at_once = active.finishing = False
        for n, (path, _, counts) in enumerate(written):
            self._written(active, n, path, 0, counts)

    def _progress(self, active: _Active, items: int) -> None:
        active.job.items_done += items
        if self.progress:
            self.progress(str(active.job.source), active.job.items_done, active.job.items_total)

    def _planned(
        self, active: _Active, plan: Any, results: list, written: dict | None = None
    ) -> None:
        """The run's plan is known: its partitions go out (``written``: those its plan's task
        wrote, see :func:`~.finish.written_with_plan`, with the offsets they were written
        with)."""
        if active.remote:
            active.offsets = Offsets(plan)
        try:
            active.job.start(
                plan,
                self.executor.background,
                remote=active.remote,
                in_order=self.executor.runs_here,
            )
        except Exception as exc:  # noqa: BLE001 - one run's failure, never the whole call
            self._fail(active, describe_failure(active.job, PLAN, exc), results)
            return
        if written:
            active.with_plan = frozenset(written)
            self._skip_written(active)
            for n, (path, items, counts, used) in sorted(written.items()):
                active.offsets.written_with(n, used)
                self._written(active, n, path, items, counts)
        self._maybe_finish(active, results)

    def _maybe_finish(self, active: _Active, results: list) -> None:
        if not (active.submitted_all and active.assembled_all) or active.finishing:
            return
        if active.remote:
            parts = [active.buffer[n] for n in range(len(active.job.plan.partitions))]
            self._submit_finish(active, finish_run, parts, active.job.sha256, self.check)
            return
        try:
            result = active.job.finish()  # cleans up after itself whatever happens
        except Exception as exc:  # noqa: BLE001 - one run's failure, never the whole call
            self.active.remove(active)
            self._record(active.number, describe_failure(active.job, WRITE, exc), results)
            return
        self._done(active, result, results)

    def _submit_finish(self, active: _Active, finish: Callable, *given: Any) -> None:
        """The task finishing the run on a worker (ahead of queued partitions): ``finish``
        given the run's source, output, options, plan and staging folder, then ``given``
        (for :func:`~.finish.finish_run`, the partitions' files in order; for
        :func:`~.finish.finish_written`, their tasks and the tasks writing the archive's
        halves). It runs on the worker hashing the input (which also writes the metadata
        half), loosely."""
        job = active.job
        task = self.executor.submit(
            (active, FINISH),
            finish,
            str(job.source),
            str(job.output),
            self.options,
            job.plan,
            active.handoff,
            *given,
            priority=1,
            near=active.hashing_on,
        )
        active.finishing = True
        active.tasks.append(task)
        self.outstanding += 1

    def _submit_halves(self, active: _Active, written: list, used: list) -> None:
        """The run's archive written in two halves at once, the spectrum signal
        (:func:`~.finish.stitch_signal`) on one worker and the rest
        (:func:`~.finish.build_metadata`, where the input's digest is) on another, then
        closed by the task finishing the run (:func:`~.finish.finish_written`), on the second:
        a run's last step takes about half as long on two workers as on one."""
        job = active.job
        common = (self.options, job.plan, active.handoff, written, used)
        signal = self.executor.submit(
            (active, SIGNAL),
            stitch_signal,
            str(job.output),
            *common,
            priority=1,
            apart_from=active.hashing_on,
        )
        metadata = self.executor.submit(
            (active, METADATA),
            build_metadata,
            str(job.source),
            *common,
            job.sha256,
            priority=1,
            near=active.hashing_on,
        )
        active.tasks += [signal, metadata]
        self.outstanding += 2
        self._submit_finish(active, finish_written, written, self.check, signal, metadata)

    def _finished(
        self,
        active: _Active,
        result: ConversionResult,
        archive: str,
        inspection: dict | None,
        results: list,
    ) -> None:
        """A worker finished the run's archive in the staging folder: rename it into place."""
        try:
            result = active.job.put_in_place(result, Path(archive))
        except Exception as exc:  # noqa: BLE001 - one run's failure, never the whole call
            self.active.remove(active)
            self._record(active.number, describe_failure(active.job, WRITE, exc), results)
            return
        self._done(active, replace(result, inspection=inspection), results)

    def _done(self, active: _Active, result: ConversionResult, results: list) -> None:
        self.active.remove(active)
        if self.progress:
            self.progress(str(active.job.source), active.job.items_total, active.job.items_total)
        self._record(active.number, result, results)

    def _fail(self, active: _Active, error: MzPeakDaskError, results: list) -> None:
        self._abort(active)
        self._record(active.number, error, results)

    def _record(self, number: int, outcome: Any, results: list) -> None:
        results[number] = outcome
        if self.on_result is not None:
            self.on_result(number, outcome)
        if self.fail_fast and isinstance(outcome, BaseException):
            raise outcome

    def _abort(self, active: _Active) -> None:
        """Cancel the run's tasks and remove all it wrote (that, whatever the cancelling does)."""
        try:
            steps = [t for pair in active.steps.values() for t in pair if isinstance(t, Task)]
            for task in active.tasks + steps:
                self.executor.cancel(task)
        finally:
            active.steps.clear()
            active.chain = None
            self.outstanding -= len(active.tasks) + (0 if active.remote else len(active.buffer))
            active.tasks.clear()
            active.buffer.clear()
            if active in self.active:
                self.active.remove(active)
            active.job.abort()


def run_jobs(
    jobs: list[tuple[Path, Path]],
    options: ConvertOptions,
    cluster: ClusterOptions,
    client: Any,
    progress: Progress | None,
    fail_fast: bool,
    on_result: OnResult | None = None,
    check: bool = False,
) -> list[ConversionResult | MzPeakDaskError]:
    """Convert ``jobs``; with ``check``, runs finished on workers check their archive there
    (:attr:`ConversionResult.inspection`)."""
    with open_executor(cluster, client) as executor:
        # a cluster started here serves a dashboard only when asked to (a running scheduler
        # may serve one: its address is shown)
        if executor.dashboard_link and (cluster.dashboard or cluster.scheduler):
            log.info("Dask dashboard: %s", executor.dashboard_link)
            announce = getattr(progress, "announce", None)
            if announce is not None:
                announce(f"Dask dashboard: {executor.dashboard_link}")
        coordinator = Coordinator(executor, options, cluster, progress, fail_fast, on_result, check)
        return coordinator.run(jobs)
