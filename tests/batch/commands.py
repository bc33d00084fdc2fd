"""``mzpeak-dask batch`` run as users run it (a real LocalCluster of two small workers), and
what it leaves: the report and the durable state."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

# a dying worker is retried once, not three times (the test would only wait longer)
ENV = {"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1"}


def batch_command(source: Path, output: Path, *extra: str) -> list[str]:
    """``mzpeak-dask batch SOURCE OUTPUT EXTRA`` without a dashboard, as a process runs it."""
    command = [sys.executable, "-m", "mzpeak_dask", "batch", str(source), str(output)]
    return [*command, "--no-dashboard", *extra]


def batch(
    source: Path, output: Path, *extra: str, wait: bool = True
) -> subprocess.CompletedProcess | subprocess.Popen:
    """The batch on two workers of 700 MB (the huge input kills one)."""
    command = batch_command(source, output, "--workers", "2", "--memory-limit", "700MB", *extra)
    env = dict(os.environ, **ENV)
    if not wait:
        return subprocess.Popen(
            command,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)


def report(output: Path) -> dict:
    doc = json.loads((output / "batch_report.json").read_text())
    return {Path(f["input"]).name: f for f in doc["files"]}


def converted_count(output: Path) -> int:
    path = output / "batch_state.sqlite"
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=1) as db:
            return db.execute("SELECT count(*) FROM files WHERE status = 'converted'").fetchone()[0]
    except sqlite3.Error:
        return 0


def wait_for_first(process: subprocess.Popen, output: Path) -> None:
    deadline = time.monotonic() + 300
    while converted_count(output) < 1:
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.2)
