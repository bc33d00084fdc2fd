"""Where tasks run: on a Dask cluster, or inline in this process; the same operations on both.

An argument that is a Task (or a list holding Tasks) stands for that task's result, so a task
can depend on others without their results passing through this process. Every wait has a
deadline: a cluster on which no task ends for ``task_timeout`` seconds (its workers gone, a
task stuck) stops the call with a :class:`~mzpeak_dask.errors.ClusterError`.
"""

from __future__ import annotations

import contextlib
import os
import queue
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import ClusterError
from ..options import ClusterOptions
from . import handoff
from .cluster import cluster_client


class Task:
    """A submitted unit of work; ``tag`` is the caller's bookkeeping."""

    def __init__(self, tag: Any, future: Any = None, value: Any = None, error: Any = None):
        self.tag, self.future, self.value, self.error = tag, future, value, error


class InlineExecutor:
    """Runs each task at once, in this process, when it is submitted."""

    client = None
    worker_threads = 1

    def workers_see(self, folder: Path) -> bool:
        return True  # the only worker is this process

    def submit(self, tag: Any, fn: Callable, *args: Any) -> Task:
        try:
            return Task(tag, value=fn(*[_each_task(a, self.result) for a in args]))
        except Exception as exc:  # noqa: BLE001 - delivered by result(), as on a cluster
            return Task(tag, error=exc)

    def next_done(self, tasks: list[Task]) -> Task:
        return tasks[0]

    def result(self, task: Task) -> Any:
        if task.error is not None:
            raise task.error
        return task.value

    def failed(self, task: Task) -> bool:
        return task.error is not None

    def release(self, task: Task) -> None:
        task.value = None

    cancel = release


class DaskExecutor:
    """Runs tasks on a ``distributed.Client``; results stay on the workers until asked for."""

    def __init__(self, client: Any, task_timeout: float):
        self.client, self.task_timeout = client, task_timeout
        self._visible: dict[Path, bool] = {}
        # each task as it ends: a wait costs as much for 2,000 tasks in flight as for 2, where
        # ``distributed.wait`` over them all grows with their number (bench_scale, in flight)
        self._ended: queue.SimpleQueue[Task] = queue.SimpleQueue()

    @property
    def worker_threads(self) -> int:
        with contextlib.suppress(Exception):
            return max(1, sum(self.client.nthreads(callback_timeout=self.task_timeout).values()))
        return 1

    def workers_see(self, folder: Path) -> bool:
        """Whether every worker sees ``folder`` (probed once per file system: a folder below
        one they see, on the same device, is seen too)."""
        folder = Path(os.path.abspath(folder))
        if folder not in self._visible:
            device, known = _device(folder), [k for k, seen in self._visible.items() if seen]
            self._visible[folder] = any(
                folder.is_relative_to(k) and _device(k) == device for k in known
            ) or handoff.visible_to_workers(self.client, folder, self.task_timeout)
        return self._visible[folder]

    def submit(self, tag: Any, fn: Callable, *args: Any) -> Task:
        args = tuple(_each_task(a, lambda t: t.future) for a in args)
        task = Task(tag, future=self.client.submit(fn, *args, pure=False))
        task.future.add_done_callback(lambda _: self._ended.put(task))
        return task

    def next_done(self, tasks: list[Task]) -> Task:
        """The first of ``tasks`` (every task still wanted) to end; one that ends and is not
        among them (a failed run's) is forgotten. :class:`ClusterError` when none ends in time."""
        wanted, deadline = set(tasks), time.monotonic() + self.task_timeout
        with contextlib.suppress(queue.Empty):
            while True:
                task = self._ended.get(timeout=max(0.0, deadline - time.monotonic()))
                if task in wanted:
                    return task
        workers: Any = "an unknown number of"  # unless the scheduler answers in time
        with contextlib.suppress(Exception):
            workers = len(self.client.nthreads(callback_timeout=min(10, self.task_timeout)))
        raise ClusterError(
            f"no task ended on the Dask cluster in {self.task_timeout:g} s ({workers} workers): "
            "stopping (task_timeout)"
        )

    def result(self, task: Task) -> Any:
        """The value of a task :meth:`next_done` gave (fetched from its worker)."""
        return task.future.result(timeout=self.task_timeout)

    def failed(self, task: Task) -> bool:
        return task.future.status in ("error", "cancelled")

    def release(self, task: Task) -> None:
        """Forget the task: the scheduler drops it unless it runs (a message, never a wait
        on a scheduler that may not answer)."""
        task.future.release()

    cancel = release


def _each_task(arg: Any, stand_in: Callable[[Task], Any]) -> Any:
    """``arg`` with a Task, or each Task of a list, replaced by ``stand_in(task)``."""
    if isinstance(arg, Task):
        return stand_in(arg)
    if isinstance(arg, list):
        return [stand_in(a) if isinstance(a, Task) else a for a in arg]
    return arg


def _device(folder: Path) -> int | None:
    try:
        return os.stat(folder).st_dev
    except OSError:
        return None


def executor_for(client: Any, options: ClusterOptions | None = None) -> Any:
    """Tasks on ``client``'s cluster, or inline when there is none."""
    if client is None:
        return InlineExecutor()
    return DaskExecutor(client, (options or ClusterOptions()).task_timeout)


@contextlib.contextmanager
def open_executor(options: ClusterOptions, client: Any = None) -> Iterator[Any]:
    """The executor the options ask for; a cluster started here is shut down on exit."""
    with cluster_client(options, client) as started:
        yield executor_for(started, options)


__all__ = ["DaskExecutor", "InlineExecutor", "Task", "executor_for", "open_executor"]
