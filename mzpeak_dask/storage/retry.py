"""Sending an upload's request again when the store failed it for a while.

The store's client already tries each request a few times within seconds (for S3, botocore's
retries, :data:`.urls.S3_RETRIES`); an upload's part or its completion, or a ranged read of a
run being converted, is worth more: a store restarting or shedding load for longer than that
must not cost the whole conversion.
:func:`retried` calls again after a failure that may pass (:func:`.failures.transient`),
waiting longer each time, a bounded number of times within a total deadline, and gives up at
once when asked to stop (an upload being aborted).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .failures import transient

ATTEMPTS = 4  # calls of one request at most (each with the client's own retries)
FIRST_PAUSE = 0.5  # seconds before the second call, doubled before each next one
MAX_PAUSE = 4.0
DEADLINE = 60.0  # seconds from the first call after which no call is started again


def retried[T](
    call: Callable[[], T],
    stop: threading.Event | None = None,
    attempts: int = ATTEMPTS,
    deadline: float = DEADLINE,
) -> T:
    """``call()``, called again after a transient failure (up to ``attempts`` calls, none
    started after ``deadline`` seconds nor once ``stop`` is set); the last failure is raised."""
    end = time.monotonic() + deadline
    pause = FIRST_PAUSE
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except Exception as exc:
            late = time.monotonic() + pause > end
            if attempt == attempts or late or not transient(exc):
                raise
            if stop is None:
                time.sleep(pause)
            elif stop.wait(pause):  # the upload is being aborted: no call again
                raise
            pause = min(MAX_PAUSE, pause * 2)
    raise AssertionError("unreachable")  # the loop returns or raises


__all__ = ["ATTEMPTS", "DEADLINE", "retried"]
