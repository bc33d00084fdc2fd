"""Repeated spectrum ids: the run converts, with one warning line (API, CLI, batch report),
and ``validate`` reports them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mzpeak_dask import ClusterOptions, convert
from mzpeak_dask.batch.runner import run_batch
from mzpeak_dask.read.validate import WARNING, validate
from mzpeak_dask.readers.identifiers import DuplicateIds

from ..conftest import DATA, INLINE

REPEATING = DATA / "openms" / "FileConverter_30_output.mzML"  # 236 spectra, 4 ids 58 times each
UNIQUE = DATA / "pyteomics" / "tiny.pwiz.1.1.mzML"
MESSAGE = "228 spectra repeat the id of an earlier spectrum (first 'spectrum=11')"


def test_ids_repeated_within_and_across_partitions_are_counted() -> None:
    ids = DuplicateIds()
    ids.feed(["a", "b"])
    assert ids.warning("run.mzML") is None
    ids.feed(["c", "a", "c", "d"])
    ids.feed(["e"])
    assert (ids.repeats, ids.first) == (2, "a")
    assert ids.warning("run.mzML").startswith("run.mzML: 2 spectra repeat")


def test_conversion_warns_and_validate_reports(tmp_path: Path) -> None:
    result = convert(REPEATING, tmp_path / "out.mzpeak", cluster=INLINE)
    assert result.spectra == 236
    assert result.warnings == [
        f"{REPEATING}: {MESSAGE}; looking a spectrum up by such an id finds the first"
    ]
    problems = [str(p) for p in validate(tmp_path / "out.mzpeak") if p.severity == WARNING]
    repeat = "228 spectrum rows repeat the id of an earlier one (first 'spectrum=11')"
    assert f"warning: spectra_metadata.parquet: {repeat}" in problems
    clean = convert(UNIQUE, tmp_path / "unique.mzpeak", cluster=INLINE)
    assert clean.warnings == []
    assert not [p for p in validate(tmp_path / "unique.mzpeak") if "repeat" in p.message]


@pytest.mark.slow
def test_cli_prints_one_warning_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mzpeak_dask", "convert", str(REPEATING), str(tmp_path / "o.mzpeak")]
        + ["--cluster", "inline", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        f"warning: {REPEATING}: {MESSAGE}; looking a spectrum up by such an id finds the first"
    ]


def test_batch_report_records_the_warning(tmp_path: Path) -> None:
    source = tmp_path / "repository"
    source.mkdir()
    shutil.copy(REPEATING, source / REPEATING.name)
    shutil.copy(UNIQUE, source / UNIQUE.name)
    outcome = run_batch(source, tmp_path / "mzpeak", cluster=ClusterOptions(cluster="inline"))
    assert outcome.failed == 0
    files = {
        Path(f["input"]).name: f
        for f in json.loads((tmp_path / "mzpeak" / "batch_report.json").read_text())["files"]
    }
    assert any("228 spectrum rows repeat the id" in w for w in files[REPEATING.name]["warnings"])
    assert not any("repeat" in w for w in files[UNIQUE.name]["warnings"])
