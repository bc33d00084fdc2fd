"""Steps an interruption must not cut in two: Ctrl-C (SIGINT) or SIGTERM at a wall-time limit
that arrives inside :func:`uninterrupted` is held back until the step ends, then acts as it
would have. An archive renamed into place and its record in a batch's state are one such step:
cut between them, the output would exist while the batch lists it as pending."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

HELD = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def uninterrupted() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back while the body runs. Signals reach Python's handlers in
    the main thread only; elsewhere the body runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {}
    for signum in HELD:
        handler = signal.getsignal(signum)
        if handler is not None:  # None: a handler not set from Python, left alone
            previous[signum] = signal.signal(signum, lambda s, _: caught.append(s))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(caught):
            handler = previous[signum]
            if callable(handler):
                handler(signum, None)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(signum)
