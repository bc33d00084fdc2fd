"""What a batch converts and records, whatever the paths look like: SOURCE typed as a relative
or an absolute path, one file named several times, outputs that would be inputs, an output too
large to write."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

from mzpeak_dask.batch.state import BatchState

from ..conftest import BUNDLED, DATA

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


def test_resume_knows_a_source_typed_relative_or_absolute(tmp_path: Path) -> None:
    _two_runs(tmp_path / "repository")
    first = cli("batch", "repository", "mzpeak", "--cluster", "inline", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    again = cli(
        "batch",
        str(tmp_path / "repository"),
        str(tmp_path / "mzpeak"),
        "--resume",
        "--cluster",
        "inline",
    )
    assert again.returncode == 0, again.stderr
    assert {f["status"] for f in report_files(tmp_path / "mzpeak")} == {"skipped"}
    catalog = pd.read_parquet(tmp_path / "mzpeak" / "catalog.parquet")
    assert sorted(Path(s).name for s in catalog.source) == ["a.mzML", "b.mzXML"]


def test_a_manifest_naming_one_file_three_times_converts_it_once(tmp_path: Path) -> None:
    _two_runs(tmp_path / "repository")
    manifest = tmp_path / "manifest.txt"
    manifest.write_text(
        "repository/a.mzML\n"
        "./repository/../repository/a.mzML\n"
        f"{tmp_path / 'repository' / 'a.mzML'}\n"
    )
    result = cli("batch", str(manifest), str(tmp_path / "mzpeak"), "--cluster", "inline")
    assert result.returncode == 0, result.stderr
    files = report_files(tmp_path / "mzpeak")
    assert [(Path(f["input"]).name, f["status"]) for f in files] == [("a.mzML", "converted")]
    assert len(pd.read_parquet(tmp_path / "mzpeak" / "catalog.parquet")) == 1


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


def test_a_file_too_large_to_write_fails_alone(tmp_path: Path) -> None:
    source = tmp_path / "repository"
    source.mkdir()
    shutil.copy(TINY, source / "tiny.mzML")
    shutil.copy(BUNDLED / "small.mzML", source / "small.mzML")  # its archive is 1.5 MB

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (400_000, 400_000))

    result = cli(
        "batch", str(source), str(tmp_path / "mzpeak"), "--cluster", "inline", preexec_fn=limit
    )
    assert result.returncode == 1 and "internal error" not in result.stderr, result.stderr
    files = {Path(f["input"]).name: f for f in report_files(tmp_path / "mzpeak")}
    assert files["tiny.mzML"]["status"] == "converted"
    assert files["small.mzML"]["status"] == "failed"
    assert "cannot write" in files["small.mzML"]["error"]
    assert "File too large" in files["small.mzML"]["error"]
    assert ".tmp" not in files["small.mzML"]["error"]


def test_the_catalog_lists_an_archive_once_under_two_names(tmp_path: Path) -> None:
    _two_runs(tmp_path / "repository")
    output = tmp_path / "mzpeak"
    assert cli("batch", "repository", "mzpeak", "--cluster", "inline", cwd=tmp_path).returncode == 0
    state = BatchState(output)  # as an older version recorded them: by the paths as typed
    try:
        for record in state.all():
            relative = {k: os.path.relpath(record[k], tmp_path) for k in ("input", "output")}
            state.put({**record, **relative, "finished_at": record["finished_at"] - 60})
        assert len(state.all()) == 4
    finally:
        state.close()
    again = cli("batch", "repository", "mzpeak", "--resume", "--cluster", "inline", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    catalog = pd.read_parquet(output / "catalog.parquet")
    assert sorted(Path(s).name for s in catalog.source) == ["a.mzML", "b.mzXML"]
