"""The input's SHA-256, begun on the worker that plans a run and taken by the task that
writes the archive's metadata members.

That task records the input's digest in the archive. Hashed by the task finishing a run, in
a thread beside its own work, the hash of a 100 MB input (about 80 ms) made the task about a
quarter longer, and a run's last step is the part no worker count shortens. So the plan's
task begins the hash in a thread of the lowest priority (:func:`~.executors.beside`, on
Linux), before it plans a local input larger than a partition: it takes the processor when a
core is idle (the other workers' while the plan is made, the gaps between tasks, the end of a
run, when the other workers are done) and gives it up to the partitions otherwise. The task
writing the metadata members is placed on that worker (loosely: elsewhere if the worker is
gone) and takes what the hash has done by then; on any other worker it hashes the input
itself.

At most :data:`KEPT` hashes are kept per process (those of runs aborted before they
finished are dropped the oldest first); a worker that stops does not wait for one.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections import OrderedDict

from ..tables.file_metadata import file_sha256
from .executors import beside

KEPT = 64
_BEGUN: OrderedDict[tuple[str, str], concurrent.futures.Future] = OrderedDict()
_LOCK = threading.Lock()


def begin(source: str, staging: str) -> None:
    """Start hashing ``source`` (a local file) for the run staged in ``staging``, at the
    lowest priority."""
    future = beside(file_sha256, source, lowest=True)
    with _LOCK:
        _BEGUN[(source, staging)] = future
        while len(_BEGUN) > KEPT:
            _BEGUN.popitem(last=False)


def take(source: str, staging: str) -> concurrent.futures.Future | None:
    """The hash :func:`begin` started here for this run (forgotten here), else None."""
    with _LOCK:
        return _BEGUN.pop((source, staging), None)


def worker_address() -> str | None:
    """The address of the Dask worker running the calling task (None outside one)."""
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return None


__all__ = ["KEPT", "begin", "take", "worker_address"]
