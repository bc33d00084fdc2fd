"""One batch at a time per output folder: a second batch (or the scheduled job) is refused with
a message while the first runs, and a killed batch leaves no lock behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..conftest import BUNDLED, ROOT
from ..helpers.replicate import replicate
from .commands import batch, converted_count, report, wait_for_first

pytestmark = pytest.mark.slow  # batches on real clusters


def _tree(root: Path, runs: int) -> Path:
    root.mkdir(parents=True)
    for k in range(runs):
        replicate(BUNDLED / "small.mzML", root / f"run{k}.mzML", copies=3)
    return root


def _inline_batch(source: Path, output: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "mzpeak_dask", "batch", str(source), str(output)]
        + ["--cluster", "inline", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.cluster
def test_a_second_batch_on_the_same_output_is_refused(tmp_path: Path) -> None:
    # enough runs that the first batch is still converting after two more commands have
    # started, been refused, and ended, even on a loaded machine
    source = _tree(tmp_path / "repository", runs=16)
    output = tmp_path / "mzpeak"
    first = batch(source, output, "--partition-items", "20", wait=False)
    wait_for_first(first, output)
    second = _inline_batch(source, output)
    _, refused = second.communicate(timeout=300)
    scheduled = subprocess.run(
        [str(ROOT / "workflows" / "convert_new.sh"), str(source), str(output)]
        + ["--cluster", "inline"],
        env=dict(os.environ, MZPEAK_DASK=f"{sys.executable} -m mzpeak_dask"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    still_running = first.poll() is None
    _, stderr = first.communicate(timeout=900)
    assert still_running, "the first batch ended too early to check the lock"
    assert second.returncode == 75, refused
    lines = [line for line in refused.splitlines() if line.strip()]
    assert len(lines) == 1 and "another batch" in lines[0] and f"pid {first.pid}" in lines[0]
    assert scheduled.returncode == 0
    log = (output / "logs" / "convert_new.log").read_text()
    assert "another batch" in log and "skipped" in log
    assert first.returncode == 0, stderr
    assert "FileNotFoundError" not in stderr
    assert {f["status"] for f in report(output).values()} == {"converted"}
    assert converted_count(output) == 16


def test_a_killed_batch_leaves_no_lock(tmp_path: Path) -> None:
    source = _tree(tmp_path / "repository", runs=3)
    output = tmp_path / "mzpeak"
    killed = _inline_batch(source, output, "--partition-items", "20")
    deadline = time.monotonic() + 300
    while not [p for p in output.glob(".*.tmp")] and converted_count(output) == 0:
        assert killed.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(killed.pid, signal.SIGKILL)
    killed.communicate(timeout=60)
    resumed = _inline_batch(source, output, "--resume")
    _, stderr = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, stderr
    assert {f["status"] for f in report(output).values()} <= {"converted", "skipped"}
    assert not [p for p in output.rglob("*") if p.name.endswith(".tmp")]
