"""The shipped workflows run the public CLI: the SLURM job (its worker script checked through
``cluster-script``, its batch run without SLURM, its clean stop at the wall-time signal) and
the scheduled conversion of what is new in a repository."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .batch.commands import converted_count
from .conftest import BUNDLED, DATA, ROOT
from .helpers.replicate import replicate

pytestmark = pytest.mark.slow  # the shipped workflows run whole batches

WORKFLOWS = ROOT / "workflows"
CLI = f"{sys.executable} -m mzpeak_dask"


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, MZPEAK_DASK=CLI, PYTHONPATH=str(ROOT), **extra)


def _listing(folders: list[Path]) -> list[tuple[str, list[str]]]:
    """What each folder holds (for a failure's message)."""
    return [(p.name, sorted(str(q.relative_to(p)) for q in p.rglob("*"))) for p in folders]


def _report(output: Path) -> dict[str, str]:
    doc = json.loads((output / "batch_report.json").read_text())
    return {Path(f["input"]).name: f["status"] for f in doc["files"]}


def test_slurm_job_prints_its_worker_script_without_slurm(tmp_path) -> None:
    result = subprocess.run(
        [
            "bash",
            str(WORKFLOWS / "slurm_batch.sbatch"),
            "repo",
            "out",
            str(ROOT / "configs" / "slurm.toml"),
        ],
        env=_env(CHECK="1"),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert "#SBATCH -p normal" in result.stdout and "distributed.cli.dask_worker" in result.stdout
    assert "export ZARR_ARRAY__RECTILINEAR_CHUNKS=True" in result.stdout


def test_slurm_job_runs_a_resumable_batch(tmp_path) -> None:
    source = tmp_path / "repository"
    source.mkdir()
    shutil.copy(DATA / "pyteomics" / "tiny.pwiz.1.1.mzML", source)
    shutil.copy(DATA / "depthcharge" / "TMT10-Trial-8.mgf", source)
    output = tmp_path / "mzpeak"
    command = [
        "bash",
        str(WORKFLOWS / "slurm_batch.sbatch"),
        str(source),
        str(output),
        str(ROOT / "configs" / "default.toml"),
    ]
    result = subprocess.run(
        command, env=_env(CLUSTER="inline"), capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert set(_report(output).values()) == {"converted"}
    again = subprocess.run(
        command, env=_env(CLUSTER="inline"), capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert again.returncode == 0 and set(_report(output).values()) == {"skipped"}


@pytest.mark.cluster
def test_slurm_job_stops_cleanly_at_the_wall_time_signal(tmp_path) -> None:
    source = tmp_path / "repository"
    source.mkdir()
    # many small runs: the window of in-flight partitions holds a few of them at a time, so when
    # the first is converted most of the others have not started yet
    for k in range(24):
        replicate(BUNDLED / "small.mzML", source / f"run{k:02d}.mzML", copies=2)
    output = tmp_path / "mzpeak"
    job = subprocess.Popen(
        [
            "bash",
            str(WORKFLOWS / "slurm_batch.sbatch"),
            str(source),
            str(output),
            str(ROOT / "configs" / "default.toml"),
        ],
        env=_env(CLUSTER="local", RESUBMIT="0"),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 300
    while converted_count(output) < 1:
        assert job.poll() is None, job.stdout.read()
        assert time.monotonic() < deadline
        time.sleep(0.2)
    job.send_signal(signal.SIGUSR1)  # what SLURM sends five minutes before the limit
    log, _ = job.communicate(timeout=180)
    assert job.returncode == 0, log
    assert "stopping the batch cleanly" in log
    statuses = _report(output)
    assert "pending" in statuses.values() and "converted" in statuses.values(), log
    assert len(statuses) == 24, log
    left = [p for p in output.rglob("*") if p.name.endswith(".tmp")]
    assert not left, (_listing(left), log)


def test_scheduled_pipeline_converts_only_what_is_new(tmp_path) -> None:
    repository = tmp_path / "repository"
    (repository / "2026-10").mkdir(parents=True)
    shutil.copy(DATA / "pyteomics" / "tiny.pwiz.1.1.mzML", repository / "2026-10")
    output = tmp_path / "mzpeak"
    script = [
        str(WORKFLOWS / "convert_new.sh"),
        str(repository),
        str(output),
        "--cluster",
        "inline",
    ]
    first = subprocess.run(script, env=_env(), capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, (output / "logs" / "convert_new.log").read_text()
    assert _report(output) == {"tiny.pwiz.1.1.mzML": "converted"}
    (repository / "2026-11").mkdir()
    shutil.copy(BUNDLED / "small.mzML", repository / "2026-11")
    second = subprocess.run(script, env=_env(), capture_output=True, text=True, timeout=300)
    assert second.returncode == 0
    assert _report(output) == {"tiny.pwiz.1.1.mzML": "skipped", "small.mzML": "converted"}
    assert (output / "2026-11" / "small.mzpeak").is_file()
    log = (output / "logs" / "convert_new.log").read_text()
    assert log.count("finished with status 0") == 2
