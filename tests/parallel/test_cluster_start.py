"""How a LocalCluster started here starts and stops: workers spawned (new interpreters, never
forks of the coordinator and its threads), none left behind once the conversion is over."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from mzpeak_dask import ClusterOptions
from mzpeak_dask.locks import try_lock
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


def test_a_start_method_the_user_configured_is_kept() -> None:
    """A method the user named in Dask's configuration (forkserver here, as
    DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD would) is the one the workers start by."""
    import dask

    with dask.config.set({START_METHOD_KEY: "forkserver"}):
        COORDINATOR_STATE["pid"] = os.getpid()
        with cluster_client(ClusterOptions(workers=1, dashboard=False)) as client:
            seen = client.run(_inherited)
            parents = set(client.run(os.getppid).values())
    assert list(seen.values()) == [None]
    assert os.getpid() not in parents  # forked from the fork server, not from here


def test_a_lock_held_when_the_workers_fork_is_released_when_its_owner_releases_it(
    tmp_path: Path,
) -> None:
    """A forked worker gets a copy of every descriptor, a lock's too (a batch holds its
    folder's lock while its cluster runs): the copies are closed in the worker, so the lock
    ends with its owner's release, not with the last worker."""
    path = tmp_path / "held.lock"
    lock = try_lock(path)
    assert lock is not None
    with cluster_client(ClusterOptions(workers=2, dashboard=False)) as client:
        assert len(client.run(os.getpid)) == 2
        assert try_lock(path) is None
        lock.release()
        again = try_lock(path)
        assert again is not None
        again.release()


def _sigterm_handler() -> object:
    return signal.getsignal(signal.SIGTERM)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def test_forked_workers_end_on_sigterm_whatever_the_coordinator_does_with_it() -> None:
    """The command turns SIGTERM (a time limit) into an interruption of the coordinator; its
    forked workers must still die of it, as the nanny expects of a worker it terminates."""
    before = signal.signal(signal.SIGTERM, _interrupt)
    try:
        with cluster_client(ClusterOptions(workers=2, dashboard=False)) as client:
            handlers = client.run(_sigterm_handler)
            pid = next(iter(client.run(os.getpid).values()))
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 30
            while psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie":
                assert time.monotonic() < deadline
                time.sleep(0.05)
            client.wait_for_workers(2, timeout=60)  # the nanny started another
    finally:
        signal.signal(signal.SIGTERM, before)
    assert set(handlers.values()) == {signal.SIG_DFL}


def _processes_naming(text: str) -> list[int]:
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        with_text = any(text in part for part in process.info["cmdline"] or ())
        if with_text and process.info["pid"] != os.getpid():
            found.append(process.info["pid"])
    return found


def test_a_cold_convert_on_a_local_cluster_leaves_no_process_behind(tmp_path: Path) -> None:
    """A forked worker carries the coordinator's command line: once ``convert`` has exited,
    no process naming its output may remain."""
    output = tmp_path / "left-behind-probe.mzpeak"
    done = subprocess.run(
        [sys.executable, "-m", "mzpeak_dask", "convert", str(BUNDLED / "small.mzML"), str(output)]
        + ["--workers", "2", "--no-dashboard", "-q", "--partition-items", "5"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert output.is_file()
    deadline = time.monotonic() + 5  # a process being reaped may linger an instant
    while (left := _processes_naming(str(output))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left == []
