"""No endless wait: a cluster that does not start in ``start_timeout`` seconds, or on which no
task ends for ``task_timeout`` seconds, stops the call with a one-line ClusterError and leaves
nothing at the output."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from distributed import Client, LocalCluster

from mzpeak_dask import ClusterError, ClusterOptions, convert

from ..conftest import BUNDLED
from ..helpers.clusters import ExternalCluster, silent_scheduler

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
SMALL = BUNDLED / "small.mzML"


def test_a_cluster_that_does_not_start_in_time_is_a_one_line_error(tmp_path) -> None:
    preload = Path(__file__).with_name("hang_at_start.py")
    env = dict(os.environ, DASK_DISTRIBUTED__WORKER__PRELOAD=f'["{preload}"]')
    output = tmp_path / "small.mzpeak"
    result = subprocess.run(
        [sys.executable, "-m", "mzpeak_dask", "convert", str(SMALL), str(output)]
        + ["--workers", "1", "--start-timeout", "3", "-q"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: cannot start the local Dask cluster"), lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_cluster_on_which_no_task_ends_in_time_is_a_one_line_error(tmp_path) -> None:
    """A scheduler without workers (all lost, none coming): the run's first task never ends."""
    cluster = ExternalCluster(workers=0)
    output = tmp_path / "small.mzpeak"
    try:
        with Client(cluster.address) as client:
            with pytest.raises(ClusterError, match=r"no task ended on the Dask cluster in 2 s"):
                convert(SMALL, output, cluster=ClusterOptions(task_timeout=2), client=client)
    finally:
        cluster.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_scheduler_that_stops_answering_is_a_one_line_error(tmp_path) -> None:
    """A scheduler that stops answering: no wait of the conversion is endless, the failed
    run's tasks are let go without asking the scheduler, and nothing is left at the output."""
    output = tmp_path / "small.mzpeak"
    with silent_scheduler() as call, pytest.raises(ClusterError) as raised:
        call(convert, SMALL, output, cluster=ClusterOptions(task_timeout=2))
    message = str(raised.value)  # asked where its workers write, it did not answer in 2 s
    assert message.startswith("the Dask scheduler tcp://127.0.0.1:"), message
    assert message.endswith("stopped answering: stopping"), message
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_batch_stops_within_a_minute_when_its_scheduler_stops_answering(tmp_path) -> None:
    """At the default task_timeout (an hour), a scheduler that stops answering (SIGSTOP)
    still ends a batch in about a minute (``call`` gives up after 120 s), with one
    ClusterError line naming the scheduler; the report lists every input as pending."""
    import json
    import shutil

    from mzpeak_dask.batch.runner import run_batch

    source, output = tmp_path / "in", tmp_path / "out"
    for name in ("a", "b"):
        (source / name).mkdir(parents=True)
        shutil.copy(SMALL, source / name / "small.mzML")
    with silent_scheduler() as call, pytest.raises(ClusterError) as raised:
        call(run_batch, source, output, cluster=ClusterOptions())
    message = str(raised.value)
    assert "\n" not in message and "the Dask scheduler tcp://127.0.0.1:" in message, message
    assert "stopped answering" in message, message
    report = json.loads((output / "batch_report.json").read_text())
    assert sorted(f["status"] for f in report["files"]) == ["pending", "pending"]


def test_a_conversion_stops_within_a_minute_when_its_scheduler_stops_answering(tmp_path):
    """The same for one conversion (its tasks submitted, then waited on), nothing left."""
    output = tmp_path / "small.mzpeak"
    with silent_scheduler() as call, pytest.raises(ClusterError, match="stopped answering"):
        call(convert, SMALL, output, cluster=ClusterOptions())
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_local_cluster_that_lost_all_its_workers_is_a_one_line_error(tmp_path) -> None:
    """A LocalCluster whose nanny is gone starts no worker again, while its scheduler keeps
    answering: the conversion stops within a minute or two, not at ``task_timeout``."""
    output = tmp_path / "small.mzpeak"
    outcome: list[BaseException | None] = []

    def converting(client: Client) -> None:
        try:
            convert(SMALL, output, cluster=ClusterOptions(task_timeout=900), client=client)
            outcome.append(None)
        except BaseException as error:  # noqa: BLE001 - handed to the test's thread
            outcome.append(error)

    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster:
        with Client(cluster) as client:
            for nanny in list(cluster.workers.values()):
                cluster.sync(nanny.close)
            thread = threading.Thread(target=converting, args=(client,), daemon=True)
            thread.start()
            thread.join(timeout=240)
            assert not thread.is_alive(), "still waiting for a worker after 240 s"
    assert len(outcome) == 1 and isinstance(outcome[0], ClusterError), outcome
    assert "lost all its workers" in str(outcome[0]) and "\n" not in str(outcome[0])
    assert sorted(p.name for p in tmp_path.iterdir()) == []
