"""One batch at a time per output folder: a batch holds a lock on ``.mzpeak-batch.lock`` in it
while it runs (see :mod:`mzpeak_dask.support.locks`: the lock ends with its process, however that
ends). A second batch, or the scheduled job, is refused and told who holds the folder."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

from ..errors import OutputBusyError, OutputError
from ..support.locks import HeldLock, holder, owner_note, try_lock, unsupported

log = logging.getLogger(__name__)
LOCK_FILE = ".mzpeak-batch.lock"


@contextlib.contextmanager
def output_lock(output_dir: Path) -> Iterator[None]:
    """Hold ``output_dir`` for this batch, or raise :class:`OutputBusyError`."""
    lock = _acquire(output_dir)
    try:
        yield
    finally:
        if lock is not None:
            lock.release()


def _acquire(output_dir: Path) -> HeldLock | None:
    """The lock, or None on a file system that has no locks."""
    path = output_dir / LOCK_FILE
    try:
        lock = try_lock(path, owner_note())
    except OSError as exc:
        if not unsupported(exc):
            raise OutputError(f"{path}: cannot lock the output folder ({exc.strerror})") from None
        log.warning("%s: no locks on this file system: start one batch at a time here", path)
        return None
    if lock is None:
        who = holder(path) or "a running process"
        raise OutputBusyError(
            f"{output_dir}: another batch is converting into this folder ({who}); "
            "try again when it has finished"
        )
    return lock
