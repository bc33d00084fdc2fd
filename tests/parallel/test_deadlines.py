"""No endless wait: a cluster that does not start in ``start_timeout`` seconds, or on which no
task ends for ``task_timeout`` seconds, stops the call with a one-line ClusterError and leaves
nothing at the output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from distributed import Client

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
    message = str(raised.value)
    assert message.startswith("no task ended on the Dask cluster in 2 s"), message
    assert "an unknown number of workers" in message, message
    assert sorted(p.name for p in tmp_path.iterdir()) == []
