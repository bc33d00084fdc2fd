"""Where tasks run: Dask distributed (the normal case) or inline in this process.

Both offer the same operations — submit, wait for the next finished task (or ask whether one
is done), take its result, release or cancel it, and tell whether the workers see a folder — so
one loop drives a laptop LocalCluster, a remote scheduler, a SLURM cluster or a plain in-process
run, and the conversion, the batch's inspection of its outputs and the Zarr export submit work
the same way.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..heap import keep_freed_blocks
from ..options import ClusterOptions
from . import handoff
from .cluster import cluster_client

log = logging.getLogger(__name__)


class Task:
    """A submitted unit of work; ``tag`` is the caller's bookkeeping."""

    def __init__(
        self, tag: Any, future: Any = None, value: Any = None, error: BaseException | None = None
    ):
        self.tag, self.future, self.value, self.error = tag, future, value, error


class InlineExecutor:
    """Runs each task immediately in this process (no Dask; for debugging and tiny inputs),
    whose heap is then set as a worker's is before any task (:mod:`mzpeak_dask.heap`)."""

    dashboard_link = None
    worker_threads = 1
    client = None
    runs_here = True  # tasks run in this process, in the order they are submitted

    def __init__(self) -> None:
        keep_freed_blocks()

    def workers_see(self, folder: Path, probe: Path | None = None) -> bool:
        return False

    def handoff_folder(self, staging: Path) -> str | None:
        return None

    def background(self, fn: Callable, *args: Any, first: bool = False) -> Any:
        """A thread beside the conversion (:func:`beside`)."""
        return beside(fn, *args)

    def submit(
        self,
        tag: Any,
        fn: Callable,
        *args: Any,
        priority: int = 0,
        near: str | None = None,
        apart_from: str | None = None,
    ) -> Task:
        """``fn(*args)`` now; an argument that is a Task, or a list's Task, stands for its
        value."""
        try:
            return Task(tag, value=fn(*[_each_task(a, self.result) for a in args]))
        except BaseException as exc:  # delivered through next_done, like a remote failure
            if isinstance(exc, KeyboardInterrupt):
                raise
            return Task(tag, error=exc)

    def submit_many(self, tags: list, fn: Callable, calls: list[tuple]) -> list[Task]:
        return [self.submit(tag, fn, *args) for tag, args in zip(tags, calls, strict=True)]

    def next_done(self, tasks: list[Task]) -> Task:
        return tasks[0]

    def done(self, task: Task) -> bool:
        return True

    def result(self, task: Task) -> Any:
        if task.error is not None:
            raise task.error
        return task.value

    def settle(self, task: Task) -> None:
        if task.error is not None:
            raise task.error

    def failed(self, task: Task) -> bool:
        return task.error is not None

    def release(self, task: Task) -> None:
        task.value = None

    def cancel(self, task: Task) -> None:
        pass


class DaskExecutor:
    """Runs tasks on a ``distributed.Client`` (results stay on workers until collected)."""

    runs_here = False

    def __init__(self, client: Any):
        from distributed import as_completed

        self.client = client
        self._completed = as_completed([], with_results=False)
        self._watched: set[str] = set()  # keys of the futures added to _completed
        self._done: list[Any] = []
        self._visible: dict[Path, bool] = {}
        self._workers: list[str] = []  # the cluster's workers, once asked for

    def workers_see(self, folder: Path, probe: Path | None = None) -> bool:
        """Whether every worker sees ``folder``: yes if they saw a folder above it on the same
        file system, else probed once, with a marker file written in ``probe``, a folder
        inside it, or in ``folder`` itself (every probe is a round trip to each worker)."""
        if folder not in self._visible:
            self._visible[folder] = self._seen_above(folder) or handoff.visible_to_workers(
                self.client, probe or folder
            )
        return self._visible[folder]

    def _seen_above(self, folder: Path) -> bool:
        device = _device(folder)
        return device is not None and any(
            seen and folder.is_relative_to(known) and _device(known) == device
            for known, seen in self._visible.items()
        )

    def handoff_folder(self, staging: Path) -> str | None:
        """``staging`` when every worker can see it (results then travel through files)."""
        return str(staging) if self.workers_see(staging.parent, staging) else None

    @property
    def dashboard_link(self) -> str | None:
        with contextlib.suppress(Exception):
            return self.client.dashboard_link
        return None

    @property
    def worker_threads(self) -> int:
        with contextlib.suppress(Exception):
            return max(1, sum(self.client.nthreads().values()))
        return 1

    def background(self, fn: Callable, *args: Any, first: bool = False) -> Any:
        """A cluster task outside the partition window (its future has ``.result()``): run
        after the queued partitions, or with ``first`` before them (a stream that waits on
        the network more than the processor, best begun early)."""
        return self.client.submit(fn, *args, pure=False, priority=1 if first else -1)

    def submit(
        self,
        tag: Any,
        fn: Callable,
        *args: Any,
        priority: int = 0,
        near: str | None = None,
        apart_from: str | None = None,
    ) -> Task:
        """``fn(*args)`` on the cluster; a higher ``priority`` runs before queued tasks. An
        argument that is a Task (or a list's Task) stands for its result, which stays on the
        workers: the task runs after it, where Dask finds best (usually where that result
        lives), and Dask computes it again if the worker holding it dies. ``near``: the
        worker to run it on while that worker is there (else any); ``apart_from``: a worker
        to keep it off while another is there (a task ``near`` it runs at the same time)."""
        args = tuple(_each_task(a, _future) for a in args)
        others = self._workers_but(apart_from) if apart_from else []
        near_any = [near] if near else others
        where = {"workers": near_any, "allow_other_workers": True} if near_any else {}
        future = self.client.submit(fn, *args, pure=False, priority=priority, **where)
        return Task(tag, future=future)

    def _workers_but(self, worker: str) -> list[str]:
        """The cluster's workers but ``worker`` (the list asked for once, and again when it
        does not hold ``worker``: the cluster changed)."""
        if worker not in self._workers:
            with contextlib.suppress(Exception):
                self._workers = list(self.client.nthreads())
        return [w for w in self._workers if w != worker]

    def submit_many(self, tags: list, fn: Callable, calls: list[tuple]) -> list[Task]:
        """``fn(*args)`` for each ``args`` of ``calls``, sent to the scheduler together: one
        message for them all, in which an argument they share is pickled once; they run in
        the order of ``calls`` (ahead of tasks submitted after them)."""
        if not calls:
            return []
        columns = [list(column) for column in zip(*calls, strict=True)]
        futures = self.client.map(fn, *columns, pure=False)
        return [Task(tag, future=f) for tag, f in zip(tags, futures, strict=True)]

    def next_done(self, tasks: list[Task]) -> Task:
        """The first of ``tasks`` to finish (only the tasks waited for are watched)."""
        by_key = {t.future.key: t for t in tasks}
        for task in tasks:
            if task.future.key not in self._watched:
                self._watched.add(task.future.key)
                self._completed.add(task.future)
        while True:
            for i, future in enumerate(self._done):
                if future.key in by_key:
                    del self._done[i]
                    self._watched.discard(future.key)
                    return by_key[future.key]
            self._done.append(next(self._completed))

    def done(self, task: Task) -> bool:
        return task.future.done()

    def result(self, task: Task) -> Any:
        return task.future.result()

    def settle(self, task: Task) -> None:
        """Raise the error of a finished ``task`` if it failed; its result stays on the
        workers (a task after it takes it from there), not gathered here."""
        if task.future.status != "finished":
            task.future.result()

    def failed(self, task: Task) -> bool:
        """Whether ``task`` ended in an error (a task it needed may have caused it)."""
        return task.future.status == "error"

    def release(self, task: Task) -> None:
        task.future.release()

    def cancel(self, task: Task) -> None:
        self._watched.discard(task.future.key)
        with contextlib.suppress(Exception):
            task.future.cancel()


LOWEST = 19  # the niceness of a thread begun ``beside(..., lowest=True)``
# Linux takes a thread's id for PRIO_PROCESS and sets that thread alone; elsewhere the call
# would name a process, so such a thread keeps the process's priority there
PER_THREAD = sys.platform.startswith("linux")


def beside(fn: Callable, *args: Any, lowest: bool = False) -> concurrent.futures.Future:
    """``fn(*args)`` in a thread of its own, begun now; its future's ``.result()`` raises what
    ``fn`` raised. Hashing and reading release the GIL, so the caller's own work goes on
    beside it, on another core when one is free (the input's SHA-256 beside an inline
    conversion, or beside the task finishing a run on a worker). With ``lowest``, the thread
    runs at niceness :data:`LOWEST` (on Linux), so it takes a core only when one is idle. The
    thread is a daemon: a process that ends does not wait for a result nobody will take."""
    future: concurrent.futures.Future = concurrent.futures.Future()

    def run() -> None:
        if lowest and PER_THREAD:
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), LOWEST)
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever asks for the result
            future.set_exception(exc)

    threading.Thread(target=run, name=f"mzpeak-{fn.__name__}", daemon=True).start()
    return future


def _each_task(arg: Any, stand_in: Callable[[Task], Any]) -> Any:
    """``arg`` with a Task, or each Task of a list, replaced by ``stand_in(task)`` (its value
    inline, its future on a cluster)."""
    if isinstance(arg, Task):
        return stand_in(arg)
    if isinstance(arg, list):
        return [stand_in(a) if isinstance(a, Task) else a for a in arg]
    return arg


def _future(task: Task) -> Any:
    return task.future


def _device(folder: Path) -> int | None:
    try:
        return os.stat(folder).st_dev
    except OSError:
        return None


def executor_for(client: Any) -> InlineExecutor | DaskExecutor:
    """Tasks on ``client``'s cluster, or inline when there is none."""
    return InlineExecutor() if client is None else DaskExecutor(client)


@contextlib.contextmanager
def open_executor(
    options: ClusterOptions, client: Any = None
) -> Iterator[InlineExecutor | DaskExecutor]:
    """The executor the options ask for; a cluster started here is shut down on exit."""
    with cluster_client(options, client) as started:
        yield executor_for(started)


__all__ = ["DaskExecutor", "InlineExecutor", "Task", "beside", "executor_for", "open_executor"]
