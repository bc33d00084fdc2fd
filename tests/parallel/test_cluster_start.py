"""How a LocalCluster started here starts and stops: workers spawned (new interpreters, never
forks of the coordinator and its threads, whatever Dask's configuration asks), none left behind
once the conversion is over."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from mzpeak_dask import ClusterOptions
from mzpeak_dask.parallel import cluster
from mzpeak_dask.parallel.cluster import cluster_client

from ..conftest import BUNDLED

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
START_METHOD_KEY = "distributed.worker.multiprocessing-method"
# set at run time in the coordinator: a forked worker would have it, a spawned one imports this
# module afresh and does not
COORDINATOR_STATE: dict[str, int] = {}


def _inherited() -> int | None:
    return COORDINATOR_STATE.get("pid")


def test_local_workers_are_spawned_not_forked_and_gone_after_it_closes() -> None:
    COORDINATOR_STATE["pid"] = os.getpid()
    with cluster_client(ClusterOptions(workers=2, dashboard=False)) as client:
        seen = client.run(_inherited)
        workers = list(client.run(os.getpid).values())
        commands = [" ".join(psutil.Process(pid).cmdline()) for pid in workers]
    assert list(seen.values()) == [None, None]  # nothing of the coordinator's memory
    assert all("multiprocessing" in command for command in commands), commands
    assert len(set(workers)) == 2 and os.getpid() not in workers
    assert not [pid for pid in workers if psutil.pid_exists(pid)]


def test_a_configured_fork_still_starts_spawned_workers(caplog, monkeypatch) -> None:
    """Dask's configuration may ask for forked workers (as
    DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD=fork would): the workers are spawned
    anyway, with a warning, and so is one the nanny starts again after a worker died."""
    import dask

    cluster._warn_spawned.cache_clear()  # warned once per process
    with dask.config.set({START_METHOD_KEY: "fork"}):
        COORDINATOR_STATE["pid"] = os.getpid()
        with cluster_client(ClusterOptions(workers=1, dashboard=False)) as client:
            assert list(client.run(_inherited).values()) == [None]
            [first] = client.run(os.getpid).values()
            os.kill(first, signal.SIGKILL)
            deadline = time.monotonic() + 120
            while True:  # the nanny starts another worker
                assert time.monotonic() < deadline, "no worker started again in 120 s"
                try:
                    pids = list(client.run(os.getpid).values())
                except Exception:  # noqa: BLE001 - the dead worker, still listed
                    pids = []
                if pids and first not in pids:
                    break
                time.sleep(0.2)
            assert list(client.run(_inherited).values()) == [None]
        assert dask.config.get(START_METHOD_KEY) == "fork"  # the user's setting, left as it was
    assert "workers are never forked from the coordinator: spawn is used" in caplog.text


def _processes_marked(mark: str) -> list[int]:
    """Processes whose environment holds ``MZPEAK_TEST_MARK=mark``: the command started with
    it and every process it started (spawned workers inherit the environment)."""
    found = []
    for process in psutil.process_iter(["pid"]):
        try:
            marked = process.environ().get("MZPEAK_TEST_MARK") == mark
        except (psutil.Error, OSError):  # gone meanwhile, or not ours to read
            continue
        if marked and process.info["pid"] != os.getpid():
            found.append(process.info["pid"])
    return found


def test_a_cold_convert_on_a_local_cluster_leaves_no_process_behind(tmp_path: Path) -> None:
    """Once ``convert`` has exited, no process it started may remain: not its workers, nor
    their nannies (each inherits the command's environment, which marks them)."""
    output = tmp_path / "left-behind-probe.mzpeak"
    mark = uuid.uuid4().hex
    done = subprocess.run(
        [sys.executable, "-m", "mzpeak_dask", "convert", str(BUNDLED / "small.mzML"), str(output)]
        + ["--workers", "2", "--no-dashboard", "-q", "--partition-items", "5"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "MZPEAK_TEST_MARK": mark},
    )
    assert done.returncode == 0, done.stderr
    assert output.is_file()
    deadline = time.monotonic() + 5  # a process being reaped may linger an instant
    while (left := _processes_marked(mark)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == []


MONITOR_KEY = "distributed.worker.memory.monitor-interval"


def _monitor_interval(dask_worker) -> float:
    return dask_worker.memory_manager.memory_monitor_interval


def _intervals(client) -> tuple[list[float], list[float]]:
    """The memory monitor's interval in the workers and in their nannies (in this process)."""
    nannies = [n.memory_manager.memory_monitor_interval for n in client.cluster.workers.values()]
    return list(client.run(_monitor_interval).values()), nannies


def test_a_local_cluster_reads_memory_every_second_unless_dask_is_told_otherwise() -> None:
    """The nannies run in the coordinator's process: they and their workers read memory once a
    second, not Dask's 10 times; an interval set in Dask's configuration is kept."""
    import dask

    with cluster_client(ClusterOptions(workers=1, dashboard=False)) as client:
        assert _intervals(client) == ([1.0], [1.0])
    with (
        dask.config.set({MONITOR_KEY: "250ms"}),
        cluster_client(ClusterOptions(workers=1, dashboard=False)) as client,
    ):
        assert _intervals(client) == ([0.25], [0.25])
