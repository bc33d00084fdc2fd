"""Steps an interruption must not cut in two: Ctrl-C (SIGINT) or SIGTERM at a wall-time limit
that arrives inside :func:`uninterrupted` is held back until the step ends, then acts as it
would have. An archive renamed into place and its record in a batch's state are one such step:
cut between them, the output would exist while the batch lists it as pending."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

HELD = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def uninterrupted() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back while the body runs; the same signal a second time acts
    at once (a body that hangs can still be stopped). Signals reach Python's handlers in the
    main thread only; elsewhere the body runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous: dict[int, Any] = {}

    def hold(signum: int, frame: Any) -> None:
        if signum not in caught:
            caught.append(signum)  # acts when the body ends
            return
        caught.remove(signum)  # a second time: it acts now, and not again at the end
        _restore(previous)
        _act(signum, previous[signum])

    for signum in HELD:
        if signal.getsignal(signum) is not None:  # None: a handler not set from Python
            previous[signum] = signal.signal(signum, hold)
    try:
        yield
    finally:
        _restore(previous)
        for signum in caught:
            _act(signum, previous[signum])


def _restore(previous: dict[int, Any]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def _act(signum: int, handler: Any) -> None:
    """What ``signum`` would have done under ``handler``."""
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_DFL:
        signal.raise_signal(signum)
