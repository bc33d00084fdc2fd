"""The command line run as users run it, and what a failed run must show and leave."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from .marks import require


def run_cli(
    *args: str, cwd: Path | None = None, timeout: int = 600, **kwargs
) -> subprocess.CompletedProcess:
    """``mzpeak-dask ARGS`` in a fresh process, as a user runs it. A command that says it
    started a cluster must run in a test marked ``cluster``."""
    result = subprocess.run(
        [sys.executable, "-m", "mzpeak_dask", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        **kwargs,
    )
    if CHOICE[1] in (result.stderr or ""):
        require("cluster", "a LocalCluster (the command said so)")
    return result


CHOICE = ("running in-process (", "starting a LocalCluster of ")


def one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    """A failed command that printed one ``error:`` line holding every fragment (after the
    line saying where a conversion runs, when convert chose it, and a batch's progress in
    checking its manifest's URLs)."""
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    lines = [line for line in lines if not re.fullmatch(r"checked [\d,]+/[\d,]+ URLs", line)]
    if lines and lines[0].startswith(CHOICE):
        lines = lines[1:]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def assert_clean(folder: Path, *keep: Path) -> None:
    """Nothing but the given inputs in ``folder``: no output, no temporary leftovers."""
    assert sorted(folder.iterdir()) == sorted(keep)
