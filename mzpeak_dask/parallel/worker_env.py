"""Environment and Dask settings for the worker processes this package starts.

Dask's nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``. Setting that variable also
freezes glibc's mmap threshold at 128 KiB, so every large numpy array becomes an mmap/munmap
pair with fresh page faults: encoding runs about 1.45x slower (measured: 5.30 s against 3.60 s
for the same partitions). Raising ``MALLOC_MMAP_THRESHOLD_`` alongside keeps the trimming and
restores the speed (3.66 s). glibc reads these variables when a process starts; a process
forked from the coordinator (a LocalCluster on Linux, see
:class:`~mzpeak_dask.parallel.cluster.LocalKind`), or started without them, gets that mmap
threshold, with a trim threshold of 128 MiB, from its first partition's encode
(:mod:`mzpeak_dask.heap`, by ``mallopt``). Dask's statistical profiler is turned off in
workers as well: it samples the worker's stacks every 10 ms, which costs the GIL in a
CPU-bound task.

For workers started elsewhere (``--scheduler``), put the same variables in their environment.

Workers of a LocalCluster also load this module as a Dask preload (:func:`dask_setup`): they
ignore SIGINT. Ctrl-C on a terminal goes to every process of its foreground process group, the
workers the nanny spawned included, and each would print a traceback of its own; the
coordinator alone handles the interruption and shuts the workers down. Their heap is set
before their first task (:func:`~mzpeak_dask.heap.keep_freed_blocks`: Arrow then allocates
every buffer of the run from it, the plan's too), and they are processes of the package's own,
whose garbage collector it may keep off their long-lived objects
(:func:`~mzpeak_dask.collector.own_process`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

from .. import collector
from ..heap import keep_freed_blocks

WORKER_ENVIRON = {
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    # zarr's variable ("rectilinear") chunk grids are behind a flag, needed in every process
    # that creates or opens such an array (the Zarr export runs on workers)
    "ZARR_ARRAY__RECTILINEAR_CHUNKS": "True",
}
WORKER_CONFIG = {"distributed.worker.profile.enabled": False}
PRELOAD = __name__  # the Dask preload of the local workers (dask_setup below)


def shell_exports() -> list[str]:
    """The same settings as ``export`` lines, for batch-job prologues."""
    lines = [f"export {k}={v}" for k, v in WORKER_ENVIRON.items()]
    lines.append("export DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False")
    return lines


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
    """Run by each local worker as it starts: Ctrl-C is the coordinator's to handle, and
    SIGTERM ends the worker as it ends a spawned one (a forked worker inherits the command's
    handler, which turns SIGTERM into an interruption: the nanny, stopping a worker over its
    memory limit, would then wait for a replacement that never comes)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    keep_freed_blocks()
    collector.own_process()


def quiet_dask_logs() -> None:
    """Dask logs its lifecycle at INFO and every failed task at ERROR (the coordinator reports
    each failure itself, in one line); tornado logs a traceback when a Ctrl-C lands inside one of
    distributed's event-loop calls. Both are configured when distributed is imported (from Dask's
    config, passed on to the workers) or set here when it already is."""
    import dask

    levels = {"distributed": "critical", "tornado.application": "critical"}
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "critical")
    dask.config.set({"logging": {**dask.config.get("logging", {}), **levels}})
    for name in levels:
        logging.getLogger(name).setLevel(logging.CRITICAL)
