"""Checking and describing each converted archive before the batch records it: validation, the
SHA-256 of every member, and a TIC thumbnail for the report
(:func:`~mzpeak_dask.read.inspection.inspect_output`). A run finished on a worker is checked
there, in the same task (:mod:`mzpeak_dask.parallel.finish`); the others are checked here.

Validation reads the whole archive, about a second for a 40 MB one, so done on the coordinator it
would limit a batch on many workers. When the workers can see the output folder, each check runs
as a task on the cluster and the coordinator only records its result.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from ..parallel.executors import Task, executor_for
from ..read.inspection import inspect_output


class Inspector:
    """Runs :func:`inspect_output` on the cluster when its workers see ``folder``, else here,
    through the executor the conversion uses.

    ``submit`` returns at once; ``finished`` hands back the inspections that are done (all of
    them with ``wait``), each with the caller's tag."""

    def __init__(self, client: Any, folder: Path):
        executor = executor_for(client)
        self.executor = executor if executor.workers_see(folder) else executor_for(None)
        self._pending: list[tuple[str, Task]] = []  # (output, task)

    @property
    def client(self) -> Any:
        """The client inspections run on (None: here)."""
        return self.executor.client

    def submit(self, tag: Any, output: Path) -> None:
        # ahead of queued partitions, so that the durable state keeps up with the outputs
        task = self.executor.submit(tag, inspect_output, str(output), priority=1)
        self._pending.append((str(output), task))

    def finished(self, wait: bool = False) -> list[tuple[Any, dict[str, Any]]]:
        done, still = [], []
        for output, task in self._pending:
            if wait or self.executor.done(task):
                done.append((task.tag, self._result(task, output)))
            else:
                still.append((output, task))
        self._pending = still
        return done

    def abandon(self) -> list[Any]:
        """Drop the inspections not yet collected (after an interruption, when the cluster may
        be gone); returns their tags."""
        for _, task in self._pending:
            with contextlib.suppress(BaseException):
                self.executor.cancel(task)
        tags = [task.tag for _, task in self._pending]
        self._pending = []
        return tags

    def _result(self, task: Task, output: str) -> dict[str, Any]:
        try:
            return self.executor.result(task)
        except Exception:  # noqa: BLE001 - a lost worker or task: check here instead
            return inspect_output(output)
        finally:
            with contextlib.suppress(Exception):
                self.executor.release(task)


__all__ = ["Inspector"]
