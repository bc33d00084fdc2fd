"""Settings for the worker processes this package starts, and Dask's logging.

A LocalCluster's workers load this module as a Dask preload (:func:`dask_setup`): they ignore
SIGINT. Ctrl-C on a terminal goes to every process of its foreground process group, the
workers included, and each would print a traceback of its own; the coordinator alone handles
the interruption and shuts the workers down. Workers get :data:`WORKER_ENVIRON` (SLURM jobs
as ``export`` lines); for workers started elsewhere (``--scheduler``), put it in their
environment.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

WORKER_ENVIRON = {
    # zarr's variable ("rectilinear") chunk grids are behind a flag (the export runs on workers)
    "ZARR_ARRAY__RECTILINEAR_CHUNKS": "True",
}
# Dask's profiler samples a worker's stacks every 10 ms, taking the GIL from CPU-bound tasks: the
# 102 MB run on 2 workers 2.35 s without it, 2.91-2.94 s with (tests/benchmarks/bench_scale.py)
WORKER_CONFIG = {"distributed.worker.profile.enabled": False}
PRELOAD = __name__  # the Dask preload of the local workers (dask_setup below)


def shell_exports() -> list[str]:
    """The same settings as ``export`` lines, for batch-job prologues."""
    lines = [f"export {k}={v}" for k, v in WORKER_ENVIRON.items()]
    return [*lines, "export DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False"]


@contextlib.contextmanager
def worker_settings() -> Iterator[None]:
    """Dask config under which workers spawned now get :data:`WORKER_ENVIRON`."""
    import dask

    environ: dict[str, Any] = dict(dask.config.get("distributed.nanny.pre-spawn-environ", {}))
    environ.update(WORKER_ENVIRON)
    preload = [*dask.config.get("distributed.worker.preload", []), PRELOAD]
    settings = {
        "distributed.nanny.pre-spawn-environ": environ,
        "distributed.worker.preload": preload,
        **WORKER_CONFIG,
    }
    with dask.config.set(settings):
        yield


def dask_setup(worker: Any) -> None:
    """Run by each local worker as it starts: Ctrl-C is the coordinator's to handle."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
