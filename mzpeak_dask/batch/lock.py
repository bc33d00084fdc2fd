"""One batch at a time per output folder: a batch holds a lock on ``.mzpeak-batch.lock`` in it
while it runs (see :mod:`mzpeak_dask.locks`: the lock ends with its process, however that
ends). A second batch, or the scheduled job, is refused and told who holds the folder."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from ..errors import OutputBusyError, OutputError
from ..locks import holder, owner_note, try_lock

LOCK_FILE = ".mzpeak-batch.lock"


@contextlib.contextmanager
def output_lock(output_dir: Path) -> Iterator[None]:
    """Hold ``output_dir`` for this batch, or raise :class:`OutputBusyError`."""
    path = output_dir / LOCK_FILE
    try:
        lock = try_lock(path, owner_note())
    except OSError as exc:
        raise OutputError(f"{path}: cannot lock the output folder ({exc.strerror})") from None
    if lock is None:
        who = holder(path) or "a running process"
        raise OutputBusyError(
            f"{output_dir}: another batch is converting into this folder ({who}); "
            "try again when it has finished"
        )
    try:
        yield
    finally:
        lock.release()
