"""Stopping an export's write tasks before removing what they wrote.

A failed export must not remove a run's objects while a write task may still add one. Letting
go of a task's future does not stop it once a worker runs it, so each write task checks a stop
flag (a ``distributed.Event`` named by :func:`new_flag`) with :func:`stopped` before each object
it writes. :func:`stop` raises the flag, lets go of the tasks the scheduler has not given to a
worker (wanted by no client, they never start) and waits, with a deadline, for the others.
Every call to the scheduler here has a deadline (``Event.set`` and ``Event.clear`` have none:
the same calls are made with one).

Why this is safe: a task that has started writing saw the flag down, so it started before the
flag was raised and stays in the scheduler's "processing" state until it ends: it is waited
for, not let go. A task let go had not started, and should it start all the same (the release
racing its start), it sees the flag. Inline (no client), every task has ended when it
was submitted: there is nothing to stop.
"""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

from ..parallel.executors import Task

FORGET_SECONDS = 10  # to clear the flag on the scheduler


def new_flag(executor: Any) -> str | None:
    """A stop flag for the tasks of ``executor`` (not raised; None inline)."""
    return None if executor.client is None else f"mzpeak-dask-stop-{uuid.uuid4().hex}"


def stopped(flag: str | None) -> bool:
    """Whether ``flag`` is raised: a task's check, on a worker, before it writes."""
    if flag is None:
        return False
    from distributed import Event

    return Event(flag).is_set()


def stop(executor: Any, flag: str | None, tasks: list[Task], seconds: float) -> list[Task]:
    """Raise ``flag``, let go of those of ``tasks`` not started and wait up to ``seconds`` for
    the others to end; those still running then (let go too, but running on)."""
    if flag is None:
        return []
    from distributed import wait

    client = executor.client
    with contextlib.suppress(Exception):  # a scheduler gone or silent: the futures end as lost
        client.sync(client.scheduler.event_set, name=flag, callback_timeout=seconds)
    keys = [t.future.key for t in tasks]
    try:
        states = client.run_on_scheduler(_task_states, keys, callback_timeout=seconds)
    except Exception:  # noqa: BLE001 - then every task is waited for
        states = {}
    waited = []
    for task in tasks:
        if states.get(task.future.key, "processing") == "processing":
            waited.append(task)
        else:
            executor.cancel(task)
    with contextlib.suppress(TimeoutError):
        wait([t.future for t in waited], timeout=seconds)
    running = [t for t in waited if not t.future.done()]
    for task in waited:
        executor.cancel(task)
    return running


def forget(executor: Any, flag: str | None) -> None:
    """Remove ``flag`` from the scheduler once the export has ended (as ``Event.clear``
    does, with a deadline: a scheduler that does not answer is not waited for)."""
    if flag is None:
        return
    client = executor.client
    with contextlib.suppress(Exception):
        seconds = min(FORGET_SECONDS, executor.task_timeout)
        client.sync(client.scheduler.event_clear, name=flag, callback_timeout=seconds)


def _task_states(keys: list[Any], dask_scheduler: Any = None) -> dict[Any, str]:
    """The scheduler's state of each of ``keys`` it knows (run on the scheduler)."""
    tasks = dask_scheduler.tasks
    return {key: tasks[key].state for key in keys if key in tasks}


__all__ = ["forget", "new_flag", "stop", "stopped"]
