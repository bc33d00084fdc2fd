"""Where partitions run: Dask distributed (the normal case) or inline in this process.

Both offer the same three operations to the scheduler loop — submit, wait for the next finished
task, release — so one loop drives a laptop LocalCluster, a remote scheduler, a SLURM cluster or
a plain in-process run.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import ClusterError
from ..options import ClusterOptions
from . import handoff

log = logging.getLogger(__name__)


class Task:
    """A submitted unit of work; ``tag`` is the caller's bookkeeping."""

    def __init__(
        self, tag: Any, future: Any = None, value: Any = None, error: BaseException | None = None
    ):
        self.tag, self.future, self.value, self.error = tag, future, value, error


class InlineExecutor:
    """Runs each task immediately in this process (no Dask; for debugging and tiny inputs)."""

    dashboard_link = None
    worker_threads = 1

    def handoff_folder(self, staging: Path) -> str | None:
        return None

    def background(self, fn: Callable, *args: Any) -> Any:
        """A thread beside the conversion (hashing releases the GIL)."""
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        future = pool.submit(fn, *args)
        pool.shutdown(wait=False)
        return future

    def submit(self, tag: Any, fn: Callable, *args: Any) -> Task:
        try:
            return Task(tag, value=fn(*args))
        except BaseException as exc:  # delivered through next_done, like a remote failure
            if isinstance(exc, KeyboardInterrupt):
                raise
            return Task(tag, error=exc)

    def next_done(self, tasks: list[Task]) -> Task:
        return tasks[0]

    def result(self, task: Task) -> Any:
        if task.error is not None:
            raise task.error
        return task.value

    def release(self, task: Task) -> None:
        task.value = None

    def cancel(self, task: Task) -> None:
        pass


class DaskExecutor:
    """Runs tasks on a ``distributed.Client`` (results stay on workers until collected)."""

    def __init__(self, client: Any):
        from distributed import as_completed

        self.client = client
        self._completed = as_completed([], with_results=False)
        self._done: list[Any] = []
        self._visible: dict[Path, bool] = {}

    def handoff_folder(self, staging: Path) -> str | None:
        """``staging`` when every worker can see it (results then travel through files)."""
        parent = staging.parent
        if parent not in self._visible:
            self._visible[parent] = handoff.visible_to_workers(self.client, staging)
        return str(staging) if self._visible[parent] else None

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

    def background(self, fn: Callable, *args: Any) -> Any:
        """A cluster task outside the partition window (its future has ``.result()``)."""
        return self.client.submit(fn, *args, pure=False, priority=-1)

    def submit(self, tag: Any, fn: Callable, *args: Any) -> Task:
        future = self.client.submit(fn, *args, pure=False)
        self._completed.add(future)
        return Task(tag, future=future)

    def next_done(self, tasks: list[Task]) -> Task:
        by_key = {t.future.key: t for t in tasks}
        while True:
            for i, future in enumerate(self._done):
                if future.key in by_key:
                    del self._done[i]
                    return by_key[future.key]
            self._done.append(next(self._completed))

    def result(self, task: Task) -> Any:
        return task.future.result()

    def release(self, task: Task) -> None:
        task.future.release()

    def cancel(self, task: Task) -> None:
        with contextlib.suppress(Exception):
            task.future.cancel()


@contextlib.contextmanager
def open_executor(
    options: ClusterOptions, client: Any = None
) -> Iterator[InlineExecutor | DaskExecutor]:
    """The executor the options ask for; a cluster started here is shut down on exit."""
    if client is not None:
        yield DaskExecutor(client)
        return
    if options.cluster == "inline":
        yield InlineExecutor()
        return
    from .cluster import start_client

    with start_client(options) as started:
        yield DaskExecutor(started)


__all__ = ["ClusterError", "DaskExecutor", "InlineExecutor", "Task", "open_executor"]
