"""Conversion on real Dask clusters gives the same archive, byte for byte, whatever the number
of workers and partitions — also when a worker process is killed during the run."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import dask
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from distributed import Client, Future

from mzpeak_dask import (
    ClusterError,
    ClusterOptions,
    ConversionResult,
    ConvertOptions,
    SpectrumDecodeError,
    WorkerDiedError,
    convert,
    convert_many,
    open_archive,
)
from mzpeak_dask.parallel.cluster import cluster_client

from ..conftest import BUNDLED, DATA, INLINE
from ..helpers.archives import member_digests
from ..helpers.hostile_inputs import corrupt_binary
from ..helpers.replicate import replicate

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
SMALL = BUNDLED / "small.mzML"


@pytest.fixture(scope="module")
def inline_archives(tmp_path_factory):
    """The archive written in-process, once per partitioning (digests of its members)."""
    folder = tmp_path_factory.mktemp("reference")
    made: dict[int, dict[str, str]] = {}

    def written(partition_items: int) -> dict[str, str]:
        if partition_items not in made:
            path = folder / f"small.{partition_items}.mzpeak"
            convert(SMALL, path, ConvertOptions(partition_items=partition_items), cluster=INLINE)
            made[partition_items] = member_digests(path)
        return made[partition_items]

    return written


def _contents(path: Path) -> dict[str, object]:
    """Every member's content: Parquet members as tables, the others as bytes."""
    out: dict[str, object] = {}
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            data = z.read(name)
            out[name] = pq.read_table(pa.py_buffer(data)) if name.endswith(".parquet") else data
    return out


@pytest.mark.parametrize(
    "options",
    [
        ConvertOptions(partition_items=1),
        ConvertOptions(partition_items=7),
        ConvertOptions(partition_bytes=200_000),
    ],
    ids=["1-spectrum", "7-spectra", "200kB"],
)
def test_partitioning_does_not_change_the_archive_content(
    local_client, tmp_path, inline_archives, options
) -> None:
    """Row groups never span two partitions (workers write them), so partitioning moves
    row-group cuts, and nothing else: every member holds the same rows and metadata."""
    output = tmp_path / "small.mzpeak"
    result = convert(SMALL, output, options, client=local_client)
    assert result.spectra == 48
    expected = tmp_path / "expected.mzpeak"
    convert(SMALL, expected, cluster=INLINE)
    got, want = _contents(output), _contents(expected)
    assert list(got) == list(want)
    for name in want:
        assert got[name] == want[name], name
    if options.partition_items == 1:  # one spectrum per partition: one per row group
        data = zipfile.ZipFile(output).read("spectra_data.parquet")
        assert pq.ParquetFile(pa.py_buffer(data)).metadata.num_row_groups == 48


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_any_number_of_workers_writes_the_same_bytes(tmp_path, inline_archives, workers) -> None:
    """Partitions do not depend on the workers: 1, 2 and 4 worker processes write the archive
    the coordinator alone writes, byte for byte, with many partitions or one of spectra."""
    output, small = tmp_path / f"{workers}.mzpeak", tmp_path / f"{workers}-small.mzpeak"
    with cluster_client(ClusterOptions(workers=workers, dashboard=False)) as client:
        convert(SMALL, output, ConvertOptions(partition_items=5), client=client)
        convert(SMALL, small, ConvertOptions(), client=client)
    assert member_digests(output) == inline_archives(5)
    assert member_digests(small) == inline_archives(ConvertOptions().partition_items)


def test_external_scheduler_through_the_cli(external_cluster, tmp_path, inline_archives) -> None:
    output = tmp_path / "small.mzpeak"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mzpeak_dask",
            "convert",
            str(SMALL),
            str(output),
            "--scheduler",
            external_cluster.address,
            "--partition-items",
            "6",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert member_digests(output) == inline_archives(6)


def test_killed_worker_does_not_lose_the_run(external_cluster, tmp_path) -> None:
    source = tmp_path / "small_x4.mzML"
    replicate(SMALL, source, copies=4)
    expected = tmp_path / "expected.mzpeak"
    options = ConvertOptions(partition_items=8, partition_bytes=1 << 20)  # a run in steps
    convert(source, expected, options, cluster=INLINE)
    victim = external_cluster.workers[0]
    killed = []

    def kill_one_worker(_source: str, done: int, total: int) -> None:
        if not killed and 8 <= done < total:  # a partition of spectra written, others out
            os.kill(victim.pid, signal.SIGKILL)
            killed.append(done)

    output = tmp_path / "output.mzpeak"
    with Client(external_cluster.address) as client:
        result = convert(
            source,
            output,
            options,
            client=client,
            progress=kill_one_worker,
        )
    assert killed and victim.wait(timeout=30) == -signal.SIGKILL
    assert result.spectra == 4 * 48
    assert member_digests(output) == member_digests(expected)


def test_a_worker_dying_on_every_try_fails_the_run_with_worker_died_error(tmp_path) -> None:
    """Dask gives up on a task whose worker died each time it ran it (here: on the first
    try); the coordinator turns that into a WorkerDiedError, which a batch recognises, naming
    the partition's spectra (its finishing task, failed with that partition, may be heard of
    first)."""
    source = tmp_path / "small_x4.mzML"
    replicate(SMALL, source, copies=4)
    output = tmp_path / "out.mzpeak"
    killed = []
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        cluster_client(ClusterOptions(workers=2, dashboard=False)) as client,
    ):
        workers = list(client.run(os.getpid).values())

        def kill_the_workers(_source: str, done: int, total: int) -> None:
            # once a partition of 8 spectra is written, tasks of the run are on both workers
            if not killed and 8 <= done < total:
                for pid in workers:
                    os.kill(pid, signal.SIGKILL)
                killed.append(done)

        died = r"small_x4\.mzML: spectra \d+-\d+ \(0-based\): the worker process died"
        with pytest.raises(WorkerDiedError, match=died):
            convert(
                source,
                output,
                ConvertOptions(partition_items=8, partition_bytes=1 << 20),  # in steps
                client=client,
                progress=kill_the_workers,
            )
    assert killed and not output.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small_x4.mzML"]


def test_data_error_fails_the_run_and_leaves_nothing(local_client, tmp_path) -> None:
    path = corrupt_binary(tmp_path, 30, lambda b64: b64[:20] + "%%%" + b64[23:])
    with pytest.raises(SpectrumDecodeError, match=r"corrupt\.mzML: spectrum .*scan=31"):
        convert(
            path, tmp_path / "out.mzpeak", ConvertOptions(partition_items=4), client=local_client
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corrupt.mzML"]


def test_a_task_the_cluster_cancels_fails_the_run_with_one_cluster_error_line(
    local_client, tmp_path
) -> None:
    """A run whose task the cluster cancels (a restart, another client's cancel) fails with
    one ClusterError line naming the input, not distributed's FutureCancelledError, and
    leaves nothing; the cluster converts the next run."""
    source = tmp_path / "small_x4.mzML"
    replicate(SMALL, source, 4)
    stop = threading.Event()

    def cancel_every_task() -> None:
        while not stop.wait(0.01):
            keys = list(local_client.futures)
            if keys:
                local_client.cancel([Future(k, local_client) for k in keys])

    canceller = threading.Thread(target=cancel_every_task, daemon=True)
    canceller.start()
    try:
        with pytest.raises(ClusterError, match=r"the Dask cluster cancelled it") as raised:
            options = ConvertOptions(partition_items=4)
            convert(source, tmp_path / "out.mzpeak", options, client=local_client)
    finally:
        stop.set()
        canceller.join(30)
    message = str(raised.value)
    assert message.startswith(f"{source}: ") and "\n" not in message, message
    assert sorted(p.name for p in tmp_path.iterdir()) == [source.name]
    convert(SMALL, tmp_path / "next.mzpeak", client=local_client)
    with open_archive(tmp_path / "next.mzpeak") as archive:
        assert len(archive) == 48


def test_several_inputs_side_by_side(local_client, tmp_path) -> None:
    bad = corrupt_binary(tmp_path, 2, lambda b64: "!" + b64[1:])
    jobs = [
        (SMALL, tmp_path / "a.mzpeak"),
        (bad, tmp_path / "bad.mzpeak"),
        (SMALL, tmp_path / "b.mzpeak"),
    ]
    results = convert_many(
        jobs, ConvertOptions(partition_items=10), client=local_client, fail_fast=False
    )
    assert isinstance(results[0], ConversionResult) and isinstance(results[2], ConversionResult)
    assert isinstance(results[1], SpectrumDecodeError)
    assert "scan=3" in str(results[1])
    assert member_digests(tmp_path / "a.mzpeak") == member_digests(tmp_path / "b.mzpeak")
    assert not (tmp_path / "bad.mzpeak").exists()


def test_a_worker_killed_while_the_cluster_starts_does_not_fail_the_run(tmp_path) -> None:
    marker = tmp_path / "killed"
    preload = Path(__file__).with_name("die_at_start.py")
    env = dict(
        os.environ,
        DIE_AT_START_MARKER=str(marker),
        DASK_DISTRIBUTED__WORKER__PRELOAD=f'["{preload}"]',
    )
    output = tmp_path / "small.mzpeak"
    result = subprocess.run(
        [sys.executable, "-m", "mzpeak_dask", "convert", str(SMALL), str(output)]
        + ["--workers", "2", "--no-dashboard", "-q"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert marker.exists()  # a worker was killed
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) <= 1
    with open_archive(output) as archive:
        assert len(archive) == 48


def test_batch_on_an_external_cluster_survives_a_killed_worker(tmp_path) -> None:
    """A batch of real runs on a ``dask scheduler`` with three ``dask worker`` processes, one
    killed mid-way: every run converts, and the archives equal those of a clean run here."""
    from mzpeak_dask.batch.runner import run_batch

    from ..helpers.clusters import ExternalCluster

    source = tmp_path / "repository"
    source.mkdir()
    for name in ("small.mzML", "three_test_scans.mzML"):
        shutil.copy(DATA / "mzdata" / name, source / name)
    shutil.copy(DATA / "depthcharge" / "TMT10-Trial-8.mzML", source / "tmt.mzML")
    replicate(SMALL, source / "small_x3.mzML", copies=3)
    options = ConvertOptions(partition_items=8, partition_bytes=1 << 20)  # the larger in steps
    clean = tmp_path / "clean"
    run_batch(source, clean, options, INLINE)
    cluster = ExternalCluster(workers=3)
    victim = cluster.workers[1]
    killed = []

    def kill_one_worker(_source: str, done: int, total: int) -> None:
        if not killed and done < total:
            os.kill(victim.pid, signal.SIGKILL)
            killed.append(done)

    output = tmp_path / "out"
    try:
        with Client(cluster.address) as client:
            outcome = run_batch(source, output, options, client=client, progress=kill_one_worker)
    finally:
        cluster.close()
    assert killed and victim.returncode == -signal.SIGKILL
    report = json.loads((output / "batch_report.json").read_text())
    assert [f["status"] for f in report["files"]] == ["converted"] * 4, outcome
    for archive in clean.glob("*.mzpeak"):
        assert member_digests(output / archive.name) == member_digests(archive)


def test_a_dashboard_is_served_only_when_bokeh_can_draw_it(caplog) -> None:
    """Asked for a dashboard without bokeh installed, a cluster started here says so and runs
    as without one."""
    bokeh = importlib.util.find_spec("bokeh") is not None
    with cluster_client(ClusterOptions(workers=1, dashboard=True)) as client:
        assert client.cluster.scheduler_info
    assert ("the Dask dashboard needs bokeh" in caplog.text) is not bokeh
