"""Work on a few threads of this process with a deadline: the checks a resuming batch makes
of its earlier outputs (each input hashed, each archive validated) must not wait for ever on
a file that stops answering (a network file system's server gone, an object store that
holds a connection open).

The threads are daemons: one stuck in a read that never returns cannot keep the command from
ending with its error.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import InputError


class CheckDeadlineError(InputError, TimeoutError):
    """No check ended within the deadline."""


def map_within(
    fn: Callable[[Any], Any],
    items: Sequence[Any],
    threads: int,
    seconds: float,
    named: Callable[[Any], str],
    doing: str,
) -> list[Any]:
    """``[fn(item) for item in items]`` on up to ``threads`` threads, in order; an exception
    of ``fn`` is raised here. When no call ends for ``seconds``, :class:`CheckDeadlineError`
    names (``named``) an item still being worked on and what was being done (``doing``)."""
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    done: queue.SimpleQueue[tuple[int, Any, BaseException | None]] = queue.SimpleQueue()
    started: set[int] = set()
    for at in range(len(items)):
        todo.put(at)

    def work() -> None:
        while True:
            try:
                at = todo.get_nowait()
            except queue.Empty:
                return
            started.add(at)
            try:
                done.put((at, fn(items[at]), None))
            except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
                done.put((at, None, exc))

    for _ in range(min(threads, len(items))):
        threading.Thread(target=work, daemon=True, name="mzpeak-dask-check").start()
    results: list[Any] = [None] * len(items)
    finished: set[int] = set()
    try:
        for _ in items:
            try:
                at, value, exc = done.get(timeout=seconds)
            except queue.Empty:
                stuck = min(started - finished)
                raise CheckDeadlineError(
                    f"{named(items[stuck])}: no answer within {seconds:g} s while {doing}"
                ) from None
            if exc is not None:
                raise exc
            results[at] = value
            finished.add(at)
    finally:  # on an error or the deadline the threads take nothing more
        with contextlib.suppress(queue.Empty):
            while True:
                todo.get_nowait()
    return results


__all__ = ["CheckDeadlineError", "map_within"]
