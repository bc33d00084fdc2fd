"""A Dask worker preload that kills the first worker process loading it (SIGKILL, as the
out-of-memory killer would), while the cluster starts. Later workers start normally: the
first one claims ``$DIE_AT_START_MARKER`` (created exclusively)."""

from __future__ import annotations

import os
import signal


def dask_setup(worker: object) -> None:
    try:
        fd = os.open(os.environ["DIE_AT_START_MARKER"], os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    os.kill(os.getpid(), signal.SIGKILL)
