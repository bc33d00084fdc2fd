"""The coordinator: it schedules each run's tasks, renames finished archives into place and
records every outcome. It reads no data.

Every run takes one path (:mod:`.tasks`): a plan task, then one task per partition and the
finishing task, submitted together (the partitions' results pass from worker to worker to the
finishing task). Inline, the same tasks run in this process. A small run takes the same three
steps one after another in one task, with the small runs after it (:meth:`Coordinator._pack`).
Where the workers cannot see a run's staging folder (other machines, no shared storage), its
plan and finishing task run here, and its partitions' parts come back to be filed. Each task
carries a :class:`Tag` (its :class:`~.failures.Step` and runs); one run here is collected
from a queue as one run on a worker is, and every run's progress is one :class:`_Run`.

New runs start while fewer than ``window`` tasks are in flight, so memory stays bounded however
many and large the inputs. A task that fails for a data reason fails its run (with
``fail_fast``, the call); a failed run leaves nothing at its output. Dask reruns the tasks of
a worker that died. ``on_result`` hears of every run as it ends.
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
from ..archive.staging import remove_held, sweep_outputs
from ..encode.contracts import ConversionResult, Progress, RunPlan
from ..errors import MzPeakDaskError
from ..model.run_paths import RunPaths
from ..options import ClusterOptions, ConvertOptions
from ..support.interrupts import uninterrupted
from . import handoff, tasks
from .executors import InlineExecutor, Task, open_executor
from .failures import Step, describe_failure

log = logging.getLogger(__name__)
MAX_PACK = 32  # small runs converted whole by one task
OnResult = Callable[[int, "ConversionResult | MzPeakDaskError"], None]


@dataclass(eq=False)
class _Run:
    """A run's progress: its plan, its tasks in flight, parts filed here, items written."""

    number: int
    job: RunJob
    shared: bool  # the workers see its staging folder
    plan: RunPlan | None = None
    tasks: list[Task] = field(default_factory=list)
    filed: dict[int, tasks.Written] = field(default_factory=dict)
    items_done: int = 0
    items_total: int = 0


@dataclass(frozen=True)
class Tag:
    """What a task does, for which runs (several: small runs converted whole), which part."""

    step: Step
    runs: tuple[_Run, ...]
    part: int = 0


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
        """``check``: each finishing task also checks its archive, for a batch to record."""
        self.executor = executor
        self.here = InlineExecutor()  # the steps of runs the workers cannot see, run here:
        self.ended_here: deque[Task] = deque()  # their tasks, collected as the executor's are
        self.options, self.check = options, check
        self.progress, self.fail_fast, self.on_result = progress, fail_fast, on_result
        self.threads = executor.worker_threads
        self.window = cluster.window or 2 * self.threads + 2
        self.runs: list[_Run] = []

    def run(self, jobs: list[RunPaths]) -> list[ConversionResult | MzPeakDaskError]:
        self.results: list[Any] = [None] * len(jobs)
        self.inputs = Inputs(p.source for p in jobs)  # no output may overwrite one
        sweep_outputs(p.output for p in jobs)  # what conversions that died left for them
        self._probe_common(jobs)
        pending = deque(enumerate(jobs))
        try:
            while pending or self.runs:
                in_flight = [t for r in self.runs for t in r.tasks]
                if self.ended_here:
                    self._collect(self.ended_here.popleft(), self.here)
                elif pending and len(in_flight) < self.window:
                    self._start(pending)
                else:
                    self._collect(self.executor.next_done(in_flight), self.executor)
        except BaseException:
            try:
                for run in list(self.runs):
                    with contextlib.suppress(Exception):  # each run's, whatever the others do
                        self._abort(run)
            finally:  # whatever a run left (it never ended): nothing stays beside the outputs
                remove_held(p.output for p in jobs)
            raise
        return self.results

    def _probe_common(self, jobs: list[RunPaths]) -> None:
        """Ask once whether the workers see the folder holding every output (a batch's)."""
        parents = {os.path.abspath(p.output.parent) for p in jobs}
        if len(parents) > 1 and (common := Path(os.path.commonpath(parents))).is_dir():
            self.executor.workers_see(common)

    def _start(self, pending: deque) -> None:
        """Start the next run in steps, or the next small runs whole (:meth:`_pack`)."""
        pack = self._pack(pending)
        if pack:
            whole = [(run.job.paths, str(run.job.staging.path), self._check(run)) for run in pack]
            self._submit(Tag(Step.WHOLE, tuple(pack)), tasks.convert_each, whole, self.options)
        elif pending and (run := self._open(*pending.popleft())) is not None:
            self._steps(run)

    def _steps(self, run: _Run) -> None:
        """The run's plan task (here when the workers cannot see its staging folder)."""
        args = (run.job.paths, str(run.job.staging.path), self.options)
        self._submit(Tag(Step.PLAN, (run,)), tasks.plan, *args)

    def _pack(self, pending: deque) -> list[_Run]:
        """Consecutive small local runs (a partition's bytes at most) converted whole by one
        task (:func:`~.tasks.convert_each`): a task costs the coordinator (and the scheduler
        in it) about what a small run costs a worker (``tests/benchmarks/bench_scale.py``: a
        batch's coordinator share 16 % in steps, 7 % in packs). A pack holds up to
        ``MAX_PACK`` runs and two partitions' bytes, and leaves two tasks for every worker
        thread while few runs wait (the last tasks of a batch then end together)."""
        runs: list[_Run] = []
        held, limit = 0, max(1, min(MAX_PACK, len(pending) // (2 * self.threads)))
        while pending and len(runs) < limit:
            size, most = self.inputs.size(pending[0][1].source), self.options.partition_bytes
            if size is None or size > min(most, 2 * most - held):  # remote or large; pack full
                break
            run = self._open(*pending.popleft())
            if run is None:
                continue
            if not run.shared:  # its plan and finishing task run here: in steps
                self._steps(run)
                break
            runs.append(run)
            held += size
        return runs

    def _open(self, number: int, paths: RunPaths) -> _Run | None:
        try:
            run_job = RunJob(paths, self.options, self.inputs)
        except MzPeakDaskError as exc:
            self._record(number, exc)  # its errors name the input and output as the user did
            return None
        try:
            shared = self.executor.workers_see(run_job.staging.path.parent)
        except BaseException:
            run_job.abort()
            raise
        run = _Run(number, run_job, shared)
        self.runs.append(run)
        return run

    def _submit(self, tag: Tag, fn: Callable, *args: Any) -> Task:
        """The task of ``tag`` on the executor, or here for a run the workers cannot see."""
        here = tag.step in (Step.PLAN, Step.FINISH) and not tag.runs[0].shared
        task = (self.here if here else self.executor).submit(tag, fn, *args)
        (self.ended_here if here else tag.runs[0].tasks).append(task)
        return task

    def _collect(self, task: Task, where: Any) -> None:
        """A task ``where`` ran has ended: its outcome goes to its runs still going."""
        tag: Tag = task.tag
        if where is self.executor:
            tag.runs[0].tasks.remove(task)
        if tag.step is Step.WHOLE:
            self._wholes(tag.runs, task)
        elif tag.runs[0] in self.runs:  # else its run failed meanwhile
            self._done(tag, task, where)

    def _wholes(self, pack: tuple[_Run, ...], task: Task) -> None:
        """The outcomes of a task converting the runs of ``pack`` whole."""
        try:
            outcomes = self.executor.result(task)
        except Exception as exc:  # noqa: BLE001 - e.g. its worker died each time
            outcomes = [exc] * len(pack)
        finally:
            self.executor.release(task)
        for run, outcome in zip(pack, outcomes, strict=True):
            if run in self.runs and isinstance(outcome, Exception):
                self._fail(run, describe_failure(run.job, Step.WHOLE, outcome))
            elif run in self.runs:
                self._finished(run, outcome)

    def _done(self, tag: Tag, task: Task, where: Any) -> None:
        run = tag.runs[0]
        # a partition whose parts the finishing task reads: here only its end (or error) counts
        fetch = tag.step is not Step.PART or not run.shared or where.failed(task)
        try:
            value = where.result(task) if fetch else None
        except Exception as exc:  # noqa: BLE001 - one run's failure, never the whole call
            if tag.step is Step.FINISH:  # a partition it needed may have failed: that one is named
                failed = (t.tag for t in run.tasks if t.tag.step is Step.PART and where.failed(t))
                tag = next(failed, tag)
            part = run.plan.partitions[tag.part] if tag.step is Step.PART else None
            self._fail(run, describe_failure(run.job, tag.step, exc, part))
            return
        finally:
            where.release(task)
        if tag.step is Step.PLAN:
            self._planned(run, value)
        elif tag.step is Step.FINISH:
            self._finished(run, value)
        else:
            self._written(run, tag.part, value)

    def _planned(self, run: _Run, plan: RunPlan) -> None:
        """Submit the run's partitions and, where the workers see its staging folder, the
        task finishing it after them."""
        run.plan = plan
        run.items_total = sum(len(p.items) for p in plan.partitions)
        folder = str(run.job.staging.path) if run.shared else None
        offsets, write = tasks.planned_offsets(plan), tasks.write_partition_file
        parts = [
            self._submit(Tag(Step.PART, (run,), n), write, folder, p, plan.spec, offsets[n])
            for n, p in enumerate(plan.partitions)
        ]
        if run.shared:
            self._finish(run, parts)

    def _finish(self, run: _Run, written: list) -> None:
        args = (run.job.paths, self.options, run.plan, str(run.job.staging.path), written)
        self._submit(Tag(Step.FINISH, (run,)), tasks.finish, *args, self._check(run))

    def _check(self, run: _Run) -> str | None:
        """What a finished archive's inspection calls it (None: not checked)."""
        return run.job.paths.named_output if self.check else None

    def _written(self, run: _Run, n: int, written: tasks.Written | None) -> None:
        run.items_done += len(run.plan.partitions[n].items)
        if self.progress:
            self.progress(run.job.paths.named_source, run.items_done, run.items_total)
        if written is None:  # its parts are the finishing task's to read
            return
        run.filed[n] = (handoff.dump(written[0], str(run.job.staging.path)), *written[1:])
        if len(run.filed) == len(run.plan.partitions):
            self._finish(run, [run.filed[k] for k in range(len(run.filed))])

    def _finished(self, run: _Run, finished: tasks.Finished) -> None:
        """Rename the run's finished archive into place and record it, one uninterrupted step."""
        with uninterrupted():
            try:
                result = run.job.put_in_place(finished.result, Path(finished.archive))
            except Exception as exc:  # noqa: BLE001 - one run's failure, never the whole call
                self._fail(run, describe_failure(run.job, Step.FINISH, exc))
                return
            self.runs.remove(run)
            named = {"input": run.job.paths.named_source, "output": run.job.paths.named_output}
            self._record(run.number, replace(result, inspection=finished.inspection, **named))
        if run.plan is None:  # converted whole
            run.items_total = result.spectra + result.chromatograms + result.wavelength_spectra
        if self.progress:  # once recorded: the output is in place (a display that fails
            self.progress(named["input"], run.items_total, run.items_total)  # loses none)

    def _fail(self, run: _Run, error: MzPeakDaskError) -> None:
        self._abort(run)
        self._record(run.number, error)

    def _record(self, number: int, outcome: Any) -> None:
        self.results[number] = outcome
        if self.on_result is not None:
            self.on_result(number, outcome)
        if self.fail_fast and isinstance(outcome, BaseException):
            raise outcome

    def _abort(self, run: _Run) -> None:
        """Cancel the run's tasks and remove all it wrote."""
        if run in self.runs:
            self.runs.remove(run)
        try:
            for task in run.tasks:
                self.executor.cancel(task)
        finally:
            run.tasks.clear()
            run.job.abort()


def run_jobs(
    jobs: list[RunPaths],
    options: ConvertOptions,
    cluster: ClusterOptions,
    client: Any,
    progress: Progress | None,
    fail_fast: bool,
    on_result: OnResult | None = None,
    check: bool = False,
) -> list[ConversionResult | MzPeakDaskError]:
    """Convert ``jobs`` on the cluster ``cluster`` asks for (resolved), or ``client``'s."""
    with open_executor(cluster, client) as executor:
        link = getattr(executor.client, "dashboard_link", None) if cluster.dashboard else None
        if link:  # a cluster started here serves a dashboard only when asked to
            log.info("Dask dashboard: %s", link)
            if (announce := getattr(progress, "announce", None)) is not None:
                announce(f"Dask dashboard: {link}")
        coordinator = Coordinator(executor, options, cluster, progress, fail_fast, on_result, check)
        return coordinator.run(jobs)
