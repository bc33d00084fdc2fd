"""Dask clusters started as separate ``dask scheduler`` / ``dask worker`` processes on
127.0.0.1, the workers optionally unable to see a folder (as on other machines)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from distributed import Client

from .marks import require

UNSHARE = ["unshare", "--mount", "--propagation", "private"]


def can_hide_folders() -> bool:
    """Whether this machine lets a process mount over a folder in its own mount namespace
    (root, or a user namespace; containers may forbid both)."""
    try:
        done = subprocess.run(
            [*UNSHARE, "sh", "-c", "mount -t tmpfs none /mnt"], capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ExternalCluster:
    """``python -m dask scheduler`` and ``python -m dask worker`` processes. With ``hidden``,
    each worker runs in its own mount namespace with an empty file system mounted over that
    folder: it cannot see what this process writes there, as a worker on another machine."""

    def __init__(self, workers: int, nanny: bool = False, hidden: str | None = None):
        require("cluster", "a Dask scheduler and workers")
        self.hidden = hidden
        self.port = _free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.processes = [
            self._spawn(
                "scheduler", "--host", "127.0.0.1", "--port", str(self.port), "--no-dashboard"
            )
        ]
        self.workers = [
            self._spawn(
                "worker",
                self.address,
                "--nthreads",
                "1",
                "--nanny" if nanny else "--no-nanny",
                "--no-dashboard",
                "--host",
                "127.0.0.1",
                apart=hidden is not None,
            )
            for _ in range(workers)
        ]
        self.processes += self.workers
        self._wait(workers)

    def _spawn(self, *args: str, apart: bool = False) -> subprocess.Popen:
        command = [sys.executable, "-m", "dask", *args]
        if apart:  # mount, then run the worker in its place (its pid is the worker's)
            script = 'mount -t tmpfs none "$0" && exec "$@"'
            command = [*UNSHARE, "sh", "-c", script, self.hidden, *command]
        return subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def _wait(self, workers: int) -> None:
        deadline = time.monotonic() + 60
        while True:
            try:
                with Client(self.address, timeout="5s") as client:
                    if workers:
                        client.wait_for_workers(workers, timeout=60)
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def close(self) -> None:
        for p in reversed(self.processes):
            p.kill()
        for p in self.processes:
            p.wait(timeout=30)


@contextlib.contextmanager
def workers_apart(folder: str | os.PathLike) -> Iterator[Client]:
    """A client of a scheduler and two workers that cannot see ``folder`` (workers on other
    machines, no shared file system); the test is skipped, saying why, where the machine
    forbids mount namespaces."""
    import pytest

    if not can_hide_folders():
        pytest.skip("workers apart need mount namespaces (unshare), which this machine forbids")
    cluster = ExternalCluster(workers=2, hidden=os.fspath(folder))
    try:
        with Client(cluster.address) as client:
            yield client
    finally:
        cluster.close()


@contextlib.contextmanager
def silent_scheduler() -> Iterator[Callable[..., Any]]:
    """Yields ``call(fn, *args, **kwargs)``, which runs ``fn(*args, client=..., **kwargs)``
    on a client of a scheduler (one worker) that has stopped answering, its connections left
    open (SIGSTOP: a frozen process, a network cut), and returns or raises what ``fn`` does.
    Should ``fn`` still run after 120 s, ``call`` raises TimeoutError (it hangs). The
    scheduler answers again once ``fn`` is done."""
    cluster = ExternalCluster(workers=1)
    scheduler = cluster.processes[0]
    try:
        with Client(cluster.address) as client, ThreadPoolExecutor(1) as pool:

            def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
                scheduler.send_signal(signal.SIGSTOP)
                try:
                    return pool.submit(fn, *args, client=client, **kwargs).result(timeout=120)
                finally:
                    scheduler.send_signal(signal.SIGCONT)

            yield call
    finally:
        cluster.close()
