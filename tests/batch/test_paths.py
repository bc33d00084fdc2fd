"""What a batch converts and records, whatever the paths look like: outputs that would be
inputs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from ..conftest import DATA

TINY = DATA / "pyteomics" / "tiny.pwiz.1.1.mzML"


def cli(*args: str, cwd: Path | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mzpeak_dask", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
        **kwargs,
    )


def report_files(output: Path) -> list[dict]:
    return json.loads((output / "batch_report.json").read_text())["files"]


def _two_runs(root: Path) -> None:
    root.mkdir()
    shutil.copy(TINY, root / "a.mzML")
    shutil.copy(DATA / "pyteomics" / "test.mzXML", root / "b.mzXML")


def test_an_output_that_would_be_an_input_fails_alone(tmp_path: Path) -> None:
    source = tmp_path / "repository"
    _two_runs(source)
    disguised = source / "c.mzpeak"  # an mzML named like an archive: its output is itself
    shutil.copy(TINY, disguised)
    before = disguised.read_bytes()
    manifest = tmp_path / "manifest.txt"
    manifest.write_text("repository/a.mzML\nrepository/b.mzXML\nrepository/c.mzpeak\n")
    (source / "b.mzpeak").symlink_to(source / "b.mzXML")  # the output of b is a link to b
    result = cli("batch", str(manifest), str(source), "--cluster", "inline")
    assert result.returncode == 1, result.stderr
    statuses = {Path(f["input"]).name: (f["status"], f["error"]) for f in report_files(source)}
    assert statuses["a.mzML"] == ("converted", None)
    assert statuses["b.mzXML"][0] == "failed" and "is the input" in statuses["b.mzXML"][1]
    assert statuses["c.mzpeak"][0] == "failed" and "is the input" in statuses["c.mzpeak"][1]
    assert disguised.read_bytes() == before and (source / "b.mzpeak").is_symlink()
