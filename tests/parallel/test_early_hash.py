"""The input's SHA-256 begun by a run's plan task, at the lowest priority, and taken by the
task finishing the run on the same worker (:mod:`mzpeak_dask.parallel.early_hash`)."""

from __future__ import annotations

import hashlib
import os
import threading
import time

import pytest

from mzpeak_dask.parallel import early_hash, executors
from mzpeak_dask.tables.file_metadata import file_sha256

from ..conftest import BUNDLED

SMALL = BUNDLED / "small.mzML"


def test_the_finishing_task_takes_the_digest_once() -> None:
    early_hash.begin(str(SMALL), "/staging/a")
    taken = early_hash.take(str(SMALL), "/staging/a")
    assert taken is not None and taken.result(timeout=60) == file_sha256(SMALL)
    assert early_hash.take(str(SMALL), "/staging/a") is None  # forgotten once taken
    assert early_hash.take(str(SMALL), "/staging/b") is None  # another run: hashed there


def test_a_hash_that_fails_fails_the_run_that_takes_it(tmp_path) -> None:
    early_hash.begin(str(tmp_path / "gone.mzML"), str(tmp_path))
    with pytest.raises(FileNotFoundError, match="gone.mzML"):
        early_hash.take(str(tmp_path / "gone.mzML"), str(tmp_path)).result(timeout=60)


def test_hashes_nobody_takes_are_dropped_the_oldest_first(tmp_path) -> None:
    source = tmp_path / "in.mzML"
    source.write_bytes(b"<mzML/>")
    runs = [str(tmp_path / f"staging{k}") for k in range(early_hash.KEPT + 1)]
    for staging in runs:  # runs aborted before they finished: nobody takes their hash
        early_hash.begin(str(source), staging)
    assert early_hash.take(str(source), runs[0]) is None
    for staging in runs[1:]:
        assert early_hash.take(str(source), staging).result(timeout=60) == file_sha256(source)


@pytest.mark.skipif(not executors.PER_THREAD, reason="a thread's priority is set on Linux")
def test_the_hash_runs_at_the_lowest_priority(tmp_path) -> None:
    """It takes a core only when the partitions leave one idle."""
    pipe = tmp_path / "input.fifo"
    os.mkfifo(pipe)  # the hash waits on it, so its thread can be looked at
    early_hash.begin(str(pipe), str(tmp_path))
    (thread,) = [t for t in threading.enumerate() if t.name == "mzpeak-file_sha256"]
    deadline = time.monotonic() + 30  # it lowers its own priority first thing
    while (niceness := os.getpriority(os.PRIO_PROCESS, thread.native_id)) != executors.LOWEST:
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)
    data = b"spectra " * 100_000
    with open(pipe, "wb") as f:
        f.write(data)
    digest = early_hash.take(str(pipe), str(tmp_path)).result(timeout=60)
    assert digest == hashlib.sha256(data).hexdigest()
    assert niceness == executors.LOWEST


def test_a_larger_local_input_is_hashed_from_before_its_plan(tmp_path, monkeypatch) -> None:
    """The plan's task begins the hash of a local input larger than a partition before it
    plans the run (the other workers wait for the plan: a core is idle), and leaves it for
    the task writing the metadata members; an input of at most a partition is not hashed
    early (its run is converted in that task, which hashes it beside its work)."""
    from mzpeak_dask import ConvertOptions
    from mzpeak_dask.parallel import finish

    hashing_when_planned: list[bool] = []
    real = finish.plan_run

    def planning(source, staging, options, reads):
        hashing_when_planned.append((str(source), str(staging)) in early_hash._BEGUN)
        return real(source, staging, options, reads=reads)

    monkeypatch.setattr(finish, "plan_run", planning)
    for partition_bytes, fans_out in ((1 << 20, True), (64 << 20, False)):
        staging = tmp_path / str(partition_bytes)
        staging.mkdir()
        options = ConvertOptions(partition_bytes=partition_bytes)
        outcome = finish.plan_or_finish(
            str(SMALL), str(tmp_path / "small.mzpeak"), options, str(staging), False
        )
        assert isinstance(outcome, finish.PlannedRun) is fans_out
        taken = early_hash.take(str(SMALL), str(staging))
        assert (taken is not None) is fans_out
        if taken is not None:
            assert taken.result(timeout=60) == file_sha256(SMALL)
    assert hashing_when_planned == [True, False]
