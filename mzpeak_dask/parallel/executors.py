"""Where tasks run: on a Dask cluster, or inline in this process; the same operations on both.

A Task argument (or one in a list) stands for its result. Every wait has a deadline: no task
ending in ``task_timeout`` s, a scheduler not answering or a local cluster left workerless stops."""

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

PROBE = 20.0  # seconds a wait goes before asking the scheduler, and it has to answer in
WORKERLESS = 3  # probes in a row finding a LocalCluster workerless: its nannies are gone too


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
        from distributed import LocalCluster

        self.client, self.task_timeout = client, task_timeout
        self._local = isinstance(getattr(client, "cluster", None), LocalCluster)
        self._workerless = 0  # a local cluster's only: other schedulers may wait for a queue
        self._visible: dict[Path, bool] = {}
        # each task as it ends: a wait costs as much for 2,000 tasks in flight as for 2, where
        # ``distributed.wait`` over them all grows with their number (bench_scale, in flight)
        self._ended: queue.SimpleQueue[Task] = queue.SimpleQueue()

    @property
    def worker_threads(self) -> int:
        with contextlib.suppress(ClusterError):
            return max(1, sum(self._answering().values()))
        return 1

    def _answering(self) -> dict:  # the scheduler's workers, or a ClusterError
        try:
            return self.client.nthreads(callback_timeout=min(PROBE, self.task_timeout))
        except Exception:  # noqa: BLE001 - a timeout, a closed connection: no answer
            where = getattr(self.client.scheduler, "address", "")
            raise ClusterError(f"the Dask scheduler {where} stopped answering: stopping") from None

    def _waited(self, get: Callable[[float], Any]) -> Any:  # get(s) again while it times out
        deadline = time.monotonic() + self.task_timeout
        while (left := deadline - time.monotonic()) > PROBE:
            with contextlib.suppress(TimeoutError, queue.Empty):
                return get(PROBE)
            workers = self._answering()  # a ClusterError if the scheduler does not answer
            self._workerless = self._workerless + 1 if self._local and not workers else 0
            if self._workerless >= WORKERLESS:
                raise ClusterError("the local Dask cluster lost all its workers and starts no "
                                   "others (killed? out of memory?): stopping")  # fmt: skip
        return get(max(0.0, left))

    def workers_see(self, folder: Path) -> bool:
        """Whether every worker sees ``folder`` (once per file system: below one seen, too)."""
        folder = Path(os.path.abspath(folder))
        if folder not in self._visible:
            self._answering()  # a frozen scheduler: one line here, not task_timeout's wait
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
        wanted = set(tasks)
        with contextlib.suppress(queue.Empty):
            while True:
                task = self._waited(lambda s: self._ended.get(timeout=s))
                if task in wanted:
                    return task
        workers: Any = "an unknown number of"  # unless the scheduler answers in time
        with contextlib.suppress(ClusterError):
            workers = len(self._answering())
        raise ClusterError(
            f"no task ended on the Dask cluster in {self.task_timeout:g} s ({workers} workers): "
            "stopping (task_timeout)"
        )

    def result(self, task: Task) -> Any:
        """The value of a task :meth:`next_done` gave (fetched from its worker)."""
        if task.future.status == "error":  # its own error, TimeoutError as any other
            return task.future.result(timeout=min(PROBE, self.task_timeout))
        return self._waited(lambda s: task.future.result(timeout=s))

    def failed(self, task: Task) -> bool:
        return task.future.status in ("error", "cancelled")

    def release(self, task: Task) -> None:
        """Forget the task (a message, never a wait on a scheduler that may not answer)."""
        task.future.release()

    cancel = release


def _each_task(arg: Any, stand_in: Callable[[Task], Any]) -> Any:
    """``arg`` with a Task, or each Task of a list, replaced by ``stand_in(task)``."""
    if isinstance(arg, list):
        return [stand_in(a) if isinstance(a, Task) else a for a in arg]
    return stand_in(arg) if isinstance(arg, Task) else arg


def _device(folder: Path) -> int | None:
    with contextlib.suppress(OSError):
        return os.stat(folder).st_dev
    return None


@contextlib.contextmanager
def open_executor(options: ClusterOptions, client: Any = None) -> Iterator[Any]:
    """The executor the options ask for; a cluster started here is shut down on exit."""
    with cluster_client(options, client) as started:
        yield InlineExecutor() if started is None else DaskExecutor(started, options.task_timeout)


__all__ = ["DaskExecutor", "InlineExecutor", "Task", "open_executor"]
