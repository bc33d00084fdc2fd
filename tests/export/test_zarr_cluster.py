"""The export and the analysis on a real LocalCluster (2 worker processes)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pytest
import zarr
from distributed import Client, Future

from mzpeak_dask import ClusterError, ClusterOptions
from mzpeak_dask.analysis import open_runs, tic, xic
from mzpeak_dask.analysis.runs import compute
from mzpeak_dask.export import stopping
from mzpeak_dask.export.zarr import to_zarr
from mzpeak_dask.parallel.cluster import cluster_client
from mzpeak_dask.parallel.executors import DaskExecutor

from ..helpers.clusters import ExternalCluster, silent_scheduler, workers_apart

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
NAMES = ["ref.chunked", "small.peaks", "metabo.point", "kitchen.point"]


@pytest.fixture(scope="module")
def client():
    with cluster_client(ClusterOptions(workers=2, dashboard=False)) as client:
        yield client


def _flag() -> object:
    return zarr.config.get("array.rectilinear_chunks", None)


def _disable() -> None:
    zarr.config.set({"array.rectilinear_chunks": False})


def test_cluster_export_equals_inline_export(exported, client, tmp_path) -> None:
    store = tmp_path / "cluster.zarr"
    archives = [exported.archives[name] for name in NAMES]
    client.run(_disable)  # as on a cluster started elsewhere: writers need no zarr flag
    results = to_zarr(archives, store, client=client, chunk_points=20_000)
    assert not any(client.run(_flag).values())
    assert [r.group for r in results] == [str(store / name) for name in NAMES]
    assert max(r.zarr_chunks for r in results) > 5  # a run cut into several Zarr chunks
    inline = tmp_path / "inline.zarr"
    to_zarr(archives, inline, cluster=ClusterOptions(cluster="inline"), chunk_points=20_000)
    with zarr.config.set({"array.rectilinear_chunks": True}):
        for name in NAMES:
            got = zarr.open_group(str(store / name), mode="r")
            want = zarr.open_group(str(inline / name), mode="r")
            assert dict(got.attrs) == dict(want.attrs)
            assert sorted(got.array_keys()) == sorted(want.array_keys())
            for key in want.array_keys():
                assert got[key].read_chunk_sizes == want[key].read_chunk_sizes, (name, key)
                assert got[key][:].tobytes() == want[key][:].tobytes(), (name, key)


def test_cluster_xic_equals_threaded_xic(exported, client) -> None:
    runs = open_runs([exported.store / "ref.chunked", exported.archives["ref.point"]])
    targets = [445.1200, 524.2648, 810.4155, 1000.0]
    threaded = xic(runs, targets, ppm=10, rt=(0.05, 0.45))
    distributed = xic(runs, targets, ppm=10, rt=(0.05, 0.45), client=client)
    assert list(threaded) == list(distributed) == ["ref.chunked", "ref.point"]
    for name in threaded:
        pd.testing.assert_frame_equal(threaded[name], distributed[name])
    assert np.count_nonzero(threaded["ref.point"][810.4155].to_numpy()) > 3


def test_an_analysis_stops_when_its_scheduler_stops_answering(exported) -> None:
    """An XIC on a client whose scheduler stops answering ends with the one-line error in
    about its deadline, instead of waiting for ever."""
    runs = open_runs([exported.archives["ref.point"]])
    with silent_scheduler() as call, pytest.raises(ClusterError) as raised:
        call(xic, runs, [445.12], task_timeout=2)
    message = str(raised.value)
    assert message.startswith("no piece of the analysis ended on the Dask cluster in 2 s"), message
    assert "\n" not in message


def _times_out() -> None:
    raise TimeoutError("the store did not answer in 5 s")


def test_a_piece_that_fails_on_a_worker_raises_its_own_error(client) -> None:
    """A piece's own error (here a TimeoutError, as a store's read raises) reaches the caller
    as it is, not as the cluster's deadline."""
    pieces = [dask.delayed(_times_out)(), dask.delayed(sum)([1, 2])]
    with pytest.raises(TimeoutError, match="the store did not answer in 5 s"):
        compute(pieces, client, task_timeout=60)
    assert compute([dask.delayed(sum)([1, 2])], client, task_timeout=60) == [3]


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_a_piece_the_cluster_cancels_is_a_one_line_cluster_error(client) -> None:
    """A piece the cluster cancels (a restart, another client's cancel) stops the analysis with
    one ClusterError line, not distributed's CancelledError."""
    piece = dask.delayed(_sleep)(15, dask_key_name=f"slow-{uuid.uuid4().hex}")

    def cancel_it() -> None:
        deadline = time.monotonic() + 30
        while piece.key not in client.futures and time.monotonic() < deadline:
            time.sleep(0.05)
        client.cancel([Future(piece.key, client)])

    canceller = threading.Thread(target=cancel_it, daemon=True)
    canceller.start()
    with pytest.raises(ClusterError, match=r"the Dask cluster cancelled a piece") as raised:
        compute([piece], client, task_timeout=120)
    canceller.join(30)
    assert "\n" not in str(raised.value)
    assert compute([dask.delayed(sum)([1, 2])], client, task_timeout=60) == [3]


def test_an_analysis_stops_when_no_piece_ends(exported) -> None:
    """A scheduler with no worker (all lost, none coming): no piece of a TIC ever ends. (The
    call runs in a thread, given 120 s: were it to wait for ever, the test fails instead.)"""
    runs = open_runs([exported.archives["ref.point"]])
    cluster = ExternalCluster(workers=0)
    pool = ThreadPoolExecutor(1)
    try:
        with Client(cluster.address) as client:
            called = pool.submit(tic, runs, client=client, task_timeout=2)
            with pytest.raises(ClusterError, match=r"no piece of the analysis ended .* in 2 s"):
                called.result(timeout=120)
    finally:
        cluster.close()  # a call still waiting ends with its scheduler
        pool.shutdown()


def test_the_xic_command_on_a_cluster_where_nothing_ends_is_a_one_line_error(exported) -> None:
    """``mzpeak-dask xic --scheduler`` honours ``--task-timeout``: a scheduler with no worker
    ends the command with one error line and exit code 1."""
    cluster = ExternalCluster(workers=0)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "mzpeak_dask", "xic", str(exported.archives["ref.point"])]
            + ["--mz", "445.12", "--scheduler", cluster.address, "--task-timeout", "2"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        cluster.close()
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: no piece of the analysis ended on the Dask cluster in 2 s")
    assert result.stdout == ""


@pytest.fixture(scope="module")
def apart(tmp_path_factory):
    """A scheduler and two workers that cannot see the folder the stores are written in (as
    workers on other machines with no shared file system)."""
    folder = tmp_path_factory.mktemp("apart")
    with workers_apart(folder) as client:
        yield client, folder


def _group(path: Path, single_file: bool) -> zarr.Group:
    store = zarr.storage.ZipStore(path, mode="r") if single_file else str(path)
    return zarr.open_group(store, mode="r")


@pytest.mark.parametrize("single_file", [False, True], ids=["folder", "single-file"])
def test_workers_that_cannot_see_the_store_export_what_inline_does(
    exported, apart, tmp_path, single_file
) -> None:
    """The workers return the chunks they cannot write; this process writes them."""
    client, folder = apart
    here = Path(tempfile.mkdtemp(dir=folder))
    assert not any(client.run(os.path.isdir, str(here)).values())  # the workers' view
    archives = [exported.archives[name] for name in NAMES[:2]]
    options = {"chunk_points": 20_000, "single_file": single_file}
    to_zarr(archives, here / "apart.zarr", client=client, **options)
    inline = tmp_path / "inline.zarr"
    to_zarr(archives, inline, cluster=ClusterOptions(cluster="inline"), **options)
    leaf = ".zarr.zip" if single_file else ""
    with zarr.config.set({"array.rectilinear_chunks": True}):
        for name in NAMES[:2]:
            got = _group(here / "apart.zarr" / f"{name}{leaf}", single_file)
            want = _group(inline / f"{name}{leaf}", single_file)
            assert dict(got.attrs) == dict(want.attrs)
            assert sorted(got.array_keys()) == sorted(want.array_keys())
            for key in want.array_keys():
                assert got[key][:].tobytes() == want[key][:].tobytes(), (name, key)
    assert sorted(p.name for p in (here / "apart.zarr").iterdir()) == sorted(
        p.name for p in inline.iterdir()
    )


def test_an_export_stops_when_its_scheduler_stops_answering(exported, tmp_path) -> None:
    """A scheduler that stops answering: the export's waits, its stop flag's included, have
    deadlines; the store keeps nothing of the run."""
    store = tmp_path / "out.zarr"
    archive = exported.archives["small.peaks"]
    with silent_scheduler() as call:
        with pytest.raises(ClusterError, match="scheduler tcp://.* stopped answering: stopping"):
            call(to_zarr, [archive], store, cluster=ClusterOptions(task_timeout=2))
    assert sorted(p.name for p in store.iterdir()) == ["zarr.json"]  # the store's own group


def test_the_stop_flag_of_a_failed_export_reaches_the_workers(client) -> None:
    """The flag that stops a failed export's write tasks (raised and cleared with deadlines,
    not by Event.set and Event.clear) is seen by a task on a worker, until the export ends."""
    executor = DaskExecutor(client, 30)
    flag = stopping.new_flag(executor)

    def seen() -> bool:
        return client.submit(stopping.stopped, flag, pure=False).result(timeout=30)

    assert not seen()
    stopping.stop(executor, flag, [], 5)
    assert seen()
    stopping.forget(executor, flag)
    assert not seen()
