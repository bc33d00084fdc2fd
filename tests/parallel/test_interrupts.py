"""An interrupt at any point of a conversion leaves no staging folder and no output."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mzpeak_dask import ClusterOptions, ConvertOptions, convert_many
from mzpeak_dask.encode.contracts import ConversionResult
from mzpeak_dask.model.run_paths import RunPaths
from mzpeak_dask.parallel.coordinator import Coordinator
from mzpeak_dask.parallel.executors import InlineExecutor

from ..conftest import BUNDLED
from ..helpers.replicate import replicate


class InterruptedProbe(InlineExecutor):
    """Ctrl-C arrives while the coordinator checks whether workers see the staging folder."""

    def workers_see(self, folder: Path) -> bool:
        raise KeyboardInterrupt


def test_interrupt_while_a_job_starts_leaves_nothing(tmp_path) -> None:
    options = ConvertOptions()
    coordinator = Coordinator(
        InterruptedProbe(), options, ClusterOptions(cluster="inline"), None, True, None
    )
    with pytest.raises(KeyboardInterrupt):
        coordinator.run([RunPaths.of(BUNDLED / "small.mzML", tmp_path / "small.mzpeak")])
    assert list(tmp_path.iterdir()) == []


class CancelFails(InlineExecutor):
    """Ctrl-C while a run's tasks are going (the second wait for one), and cancelling them
    fails, as a call to a scheduler that is gone does."""

    waits = 0

    def next_done(self, tasks: list) -> object:
        self.waits += 1
        if self.waits == 2:
            raise KeyboardInterrupt
        return super().next_done(tasks)

    def cancel(self, task: object) -> None:
        raise ConnectionError("the scheduler is gone")


def test_an_interrupt_whose_cancelling_fails_still_leaves_nothing(tmp_path) -> None:
    sources = []
    for name in ("a", "b", "c"):
        sources.append(tmp_path / f"{name}.mzML")
        replicate(BUNDLED / "small.mzML", sources[-1], copies=2)
    options = ConvertOptions(partition_items=10, partition_bytes=1 << 20)  # runs in steps
    executor = CancelFails()
    coordinator = Coordinator(executor, options, ClusterOptions(cluster="inline"), None, True, None)
    with pytest.raises(KeyboardInterrupt):
        coordinator.run([RunPaths.of(s, s.with_suffix(".mzpeak")) for s in sources])
    assert executor.waits == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.mzML", "b.mzML", "c.mzML"]


def _convert_small(folder: Path, on_result) -> None:
    """small.mzML converted in this process into ``folder`` (small.mzpeak), ``on_result``
    hearing of it."""
    source = folder / "small.mzML"
    replicate(BUNDLED / "small.mzML", source, copies=1)
    pair = [(source, folder / "small.mzpeak")]
    convert_many(pair, cluster=ClusterOptions(cluster="inline"), on_result=on_result)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_as_an_output_lands_waits_for_its_record(tmp_path, signum) -> None:
    """Ctrl-C (or SIGTERM, as the CLI handles it) while a finished archive is being recorded:
    the record is made before the interruption acts, so no output is left in place unrecorded
    (a batch stopped there listed the archive as pending)."""
    heard = []

    def on_result(k: int, outcome: object) -> None:
        os.kill(os.getpid(), signum)
        heard.append(outcome)

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, stop)
    try:
        with pytest.raises(KeyboardInterrupt):
            _convert_small(tmp_path, on_result)
    finally:
        signal.signal(signal.SIGTERM, before)
    assert len(heard) == 1 and isinstance(heard[0], ConversionResult)
    assert heard[0].spectra > 0 and (tmp_path / "small.mzpeak").is_file()


def test_a_second_interrupt_acts_at_once(tmp_path) -> None:
    """Ctrl-C twice while an output is recorded (a callback that hangs, say): the second one
    stops the call there and then."""
    heard = []

    def on_result(k: int, outcome: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        heard.append("held")
        os.kill(os.getpid(), signal.SIGINT)
        heard.append("not reached")

    with pytest.raises(KeyboardInterrupt) as raised:
        _convert_small(tmp_path, on_result)
    assert heard == ["held"]
    assert raised.value.__context__ is None  # one interruption, not one raised in another
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.slow
@pytest.mark.cluster
def test_ctrl_c_on_a_terminal_prints_one_line(tmp_path) -> None:
    """Ctrl-C on a terminal reaches every process of the foreground group, the workers the
    nanny spawned included: only the coordinator speaks."""
    source = tmp_path / "big.mzML"
    replicate(BUNDLED / "small.mzML", source, copies=30)
    output = tmp_path / "big.mzpeak"
    command = shlex.join(
        [sys.executable, "-m", "mzpeak_dask", "convert", str(source), str(output)]
        + ["--workers", "2", "--no-dashboard", "-q", "--partition-items", "20"]
    )
    terminal = subprocess.Popen(  # `script` runs the command on a pseudo-terminal of its own
        ["script", "-q", "-e", "-c", command, "/dev/null"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 300
    while not list(tmp_path.glob(".big.mzpeak.*.tmp/part-*")):  # partitions being written
        assert terminal.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    terminal.stdin.write(b"\x03")  # the terminal's interrupt character
    terminal.stdin.flush()
    shown, _ = terminal.communicate(timeout=300)
    lines = [line for line in shown.decode(errors="replace").splitlines() if line.strip("^C \r")]
    assert terminal.returncode == 130, lines
    assert len(lines) <= 2, "\n".join(lines)
    assert any("interrupted" in line for line in lines)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.mzML"]
