"""A Dask worker preload that never lets its worker finish starting (it sleeps far longer than
any test waits), as a worker stuck on a hung file system or a slow node would."""

from __future__ import annotations

import time


def dask_setup(worker: object) -> None:
    time.sleep(600)
