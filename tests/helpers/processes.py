"""A Python command in a fresh process, measured: how it ended, its wall time and its own peak
RSS (from ``wait4``: this child's alone, not the maximum over every child reaped so far)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Measured:
    returncode: int
    seconds: float
    peak_rss: int  # bytes


def run_measured(
    argv: list[str], root: Path, stdout: Path | None, stderr: Path, timeout: float
) -> Measured:
    """``python ARGV`` with checkout ``root`` imported and as the working directory, its
    standard output into the file ``stdout`` (None: discarded) and its standard error into
    ``stderr``; killed, with a TimeoutError, after ``timeout`` seconds."""
    start = time.perf_counter()
    with (
        open(stdout if stdout is not None else os.devnull, "wb") as out,
        open(stderr, "wb") as err,
    ):
        proc = subprocess.Popen(
            [sys.executable, *argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - start > timeout:
            proc.kill()
            os.wait4(proc.pid, 0)
            raise TimeoutError(f"{' '.join(argv)}: still running after {timeout} s")
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    seconds = time.perf_counter() - start
    return Measured(proc.returncode, seconds, usage.ru_maxrss * 1024)  # kB on Linux


__all__ = ["Measured", "run_measured"]
