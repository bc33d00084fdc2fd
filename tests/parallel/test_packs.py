"""Consecutive small files of a batch share a task (the cluster's cost per task is shared
between them) while enough runs wait to keep every worker busy: each run is still converted,
checked, recorded and resumable on its own, a bad file fails alone, a task holds at most two
partitions' worth of input, and a task lost with its worker gives each of its runs a task of
its own."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import dask
import pytest
from dask.utils import key_split
from distributed import get_task_stream

from mzpeak_dask import BatchOptions, ClusterOptions, ConversionResult, ConvertOptions, convert_many
from mzpeak_dask.batch.runner import run_batch
from mzpeak_dask.parallel.cluster import cluster_client
from mzpeak_dask.parallel.packs import MAX_RUNS, PARTITIONS, Room

from ..conftest import DATA, INLINE
from ..helpers.archives import member_digests
from ..helpers.hostile_inputs import corrupt_binary
from .test_finish import SMALL, THREE, TINY

MIXED = (SMALL, THREE, TINY, DATA / "depthcharge" / "TMT10-Trial-8.mzML")


def _repository(
    tmp_path: Path, copies: int, bad: bool = False, runs: tuple[Path, ...] = MIXED
) -> Path:
    """``copies`` small real runs (``runs`` in turn, four different files unless given), and
    with ``bad`` a corrupt one among them."""
    source = tmp_path / "repository"
    source.mkdir()
    for k in range(copies):
        shutil.copy(runs[k % len(runs)], source / f"run{k:02d}.mzML")
    if bad:
        corrupt = corrupt_binary(tmp_path, 2, lambda b64: "!" + b64[1:])
        corrupt.rename(source / f"run{copies // 2:02d}b.mzML")
    return source


def _statuses(output: Path) -> dict[str, str]:
    report = json.loads((output / "batch_report.json").read_text())
    return {Path(f["input"]).name: f["status"] for f in report["files"]}


def test_a_pack_takes_small_files_up_to_its_runs_and_bytes() -> None:
    room = Room.now(waiting=1000, threads=2, partition_bytes=100)
    assert room == Room(MAX_RUNS, PARTITIONS * 100)
    assert room.takes(0, 0, None)  # any run starts a pack, a large one alone
    assert not room.takes(1, 50, None)  # a large or remote file does not join one
    assert room.takes(1, 50, 100) and room.takes(2, 150, 50)
    assert not room.takes(2, 150, 51)  # over two partitions' worth
    assert not room.takes(MAX_RUNS, 0, 0)
    # two tasks for every worker thread while few runs wait, at least one run
    assert Room.now(waiting=20, threads=2, partition_bytes=100).runs == 5
    assert Room.now(waiting=3, threads=2, partition_bytes=100).runs == 1


@pytest.mark.cluster
@pytest.mark.slow
def test_small_files_share_tasks_and_each_run_stands_alone(local_client, tmp_path) -> None:
    source = _repository(tmp_path, copies=16, bad=True)
    output = tmp_path / "out"
    with get_task_stream(local_client) as stream:
        outcome = run_batch(source, output, client=local_client)
    kinds = [key_split(t["key"]) for t in stream.data]
    assert "convert_each" in kinds
    assert len(kinds) < 17  # fewer tasks than runs
    statuses = _statuses(output)
    assert statuses.pop("run08b.mzML") == "failed"
    assert set(statuses.values()) == {"converted"} and len(statuses) == 16
    failed = [r for r in outcome.records if r["status"] == "failed"]
    assert len(failed) == 1 and "run08b.mzML" in failed[0]["error"]
    assert "scan=3" in failed[0]["error"]
    clean = tmp_path / "clean"
    run_batch(source, clean, cluster=INLINE)
    for record in outcome.records:
        if record["status"] == "converted":
            archive = Path(record["output"])
            assert record["members"] == member_digests(archive)  # checked in the task
            assert member_digests(archive) == member_digests(clean / archive.relative_to(output))
    run_batch(source, output, batch=BatchOptions(resume=True), client=local_client)
    statuses = _statuses(output)  # resumed: nothing converted again
    assert statuses.pop("run08b.mzML") == "failed"
    assert set(statuses.values()) == {"skipped"}


@pytest.mark.cluster
@pytest.mark.slow
def test_a_task_holds_at_most_two_partitions_worth_of_small_files(local_client, tmp_path) -> None:
    """40 files of 238 kB, with partitions the size of one file: no task holds more than two
    (at least 20 tasks plan them), where the count of waiting runs alone would pack up to ten;
    with the default partitions (12 MiB) they share fewer tasks."""
    source = _repository(tmp_path, copies=40, runs=(THREE,))
    planned = {}
    for name, options in (
        ("one file a partition", ConvertOptions(partition_bytes=THREE.stat().st_size)),
        ("default partitions", ConvertOptions()),
    ):
        with get_task_stream(local_client) as stream:
            outcome = run_batch(source, tmp_path / name, options, client=local_client)
        assert {r["status"] for r in outcome.records} == {"converted"}
        kinds = [key_split(t["key"]) for t in stream.data]
        planned[name] = kinds.count("plan_or_finish") + kinds.count("convert_each")
    assert planned["one file a partition"] >= 20
    assert planned["default partitions"] < 20


@pytest.mark.cluster
@pytest.mark.slow
def test_a_task_lost_with_its_worker_gives_each_of_its_runs_its_own(tmp_path) -> None:
    """Workers killed while tasks of several runs are out, with no retry: each run of a lost
    task is planned again on its own (no batch retrying it), and every run converts."""
    source = _repository(tmp_path, copies=40)  # tasks of several runs
    jobs = [(s, tmp_path / "out" / f"{s.stem}.mzpeak") for s in sorted(source.iterdir())]
    killed: list[int] = []
    (tmp_path / "out").mkdir()
    (tmp_path / "undisturbed").mkdir()
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        cluster_client(ClusterOptions(workers=2, dashboard=False)) as client,
    ):
        undisturbed = [(s, tmp_path / "undisturbed" / o.name) for s, o in jobs]
        with get_task_stream(client) as stream:  # for the count of tasks
            convert_many(undisturbed, client=client)
        alone = [key_split(t["key"]) for t in stream.data].count("plan_or_finish")
        workers = client.run(os.getpid)

        def kill_the_workers(_source: str, done: int, total: int) -> None:
            if not killed and done == total:  # one run done, tasks of others out
                for pid in workers.values():
                    os.kill(pid, signal.SIGKILL)
                killed.append(done)
                # the coordinator goes on once the scheduler has seen both deaths: a run planned
                # again before then could be sent to the other dead worker and, with no retry
                # allowed, fail (under load, the two deaths can reach the scheduler apart)
                deadline = time.monotonic() + 60
                while set(workers) & set(client.scheduler_info()["workers"]):
                    assert time.monotonic() < deadline, "the killed workers were never removed"
                    time.sleep(0.05)

        with get_task_stream(client) as stream:
            results = convert_many(jobs, client=client, progress=kill_the_workers, fail_fast=False)
    kinds = [key_split(t["key"]) for t in stream.data]
    assert killed
    assert kinds.count("plan_or_finish") > alone  # the runs of a lost task, each on its own
    assert all(isinstance(r, ConversionResult) for r in results), [
        r for r in results if not isinstance(r, ConversionResult)
    ]
    for (_, output), (_, clean) in zip(jobs, undisturbed, strict=True):
        assert member_digests(output) == member_digests(clean)


@pytest.mark.cluster
@pytest.mark.slow
def test_a_run_of_several_partitions_in_a_shared_task_is_converted_there(
    local_client, tmp_path
) -> None:
    """Files small on disk whose runs still have several partitions (48 spectra, 20 to a
    partition): a shared task converts each of its runs whole, costing no task a partition
    nor one to finish it, as in this process; the last runs, each planned alone, fan out."""
    source = _repository(tmp_path, copies=16, runs=(SMALL,))
    options = ConvertOptions(partition_items=20)
    with get_task_stream(local_client) as stream:
        outcome = run_batch(source, tmp_path / "out", options, client=local_client)
    kinds = [key_split(t["key"]) for t in stream.data]
    assert kinds.count("convert_each") >= 1
    alone = kinds.count("plan_or_finish")
    assert 1 <= alone < 16
    assert kinds.count("finish_written") == alone  # only the runs planned alone fanned out
    assert kinds.count("encode_to_file") >= 2 * alone
    assert {r["status"] for r in outcome.records} == {"converted"}
    clean = tmp_path / "clean"
    run_batch(source, clean, options, INLINE)
    for record in outcome.records:
        archive = Path(record["output"])
        assert member_digests(archive) == member_digests(clean / archive.name)
