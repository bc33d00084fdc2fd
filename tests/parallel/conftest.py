"""Real Dask clusters for the tests: an embedded LocalCluster, and a scheduler plus workers
started as separate ``dask scheduler`` / ``dask worker`` processes on 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest
from distributed import Client


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ExternalCluster:
    """``python -m dask scheduler`` and ``python -m dask worker`` processes."""

    def __init__(self, workers: int, nanny: bool = False):
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
            )
            for _ in range(workers)
        ]
        self.processes += self.workers
        self._wait(workers)

    @staticmethod
    def _spawn(*args: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "dask", *args],
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


@pytest.fixture
def external_cluster():
    cluster = ExternalCluster(workers=2)
    try:
        yield cluster
    finally:
        cluster.close()
