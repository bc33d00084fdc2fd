"""The command line: convert on the default LocalCluster with visible progress, info, and the
SLURM batch script."""

from __future__ import annotations

import ast
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mzpeak_dask import open_archive

from ..conftest import BUNDLED, DATA, ROOT
from ..helpers.cli import run_cli

pytestmark = pytest.mark.slow  # each runs the command line in a fresh process

SMALL = BUNDLED / "small.mzML"


@pytest.mark.cluster
def test_convert_on_a_local_cluster_logs_progress(tmp_path) -> None:
    output = tmp_path / "small.mzpeak"
    result = run_cli(
        "convert", str(SMALL), str(output), "--workers", "2", "--partition-items", "10"
    )
    assert result.returncode == 0, result.stderr
    assert "48 spectra, 243,054 points, 1 chromatogram, " in result.stdout
    assert "done " in result.stderr and "49/49 items" in result.stderr  # non-terminal: log lines
    with open_archive(output) as archive:
        assert len(archive) == 48


def test_convert_several_inputs_into_a_folder(tmp_path) -> None:
    mgf = DATA / "mzdata" / "small.mgf"
    gz = DATA / "mzdata" / "small.mzML.gz"
    result = run_cli(
        "convert", str(mgf), str(gz), str(tmp_path), "--cluster", "inline", "--json", "-q"
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["spectra"] for r in lines] == [35, 48]
    assert [r["chromatograms"] for r in lines] == [0, 1]
    with open_archive(tmp_path / "small.mzML.gz.mzpeak") as archive:
        assert lines[1]["points"] == sum(len(spectrum.mz) for spectrum in archive)
        assert lines[1]["chromatogram_points"] == len(archive.read_chromatogram(0).time)
    # same folder, same stem: each keeps its whole name
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "small.mgf.mzpeak",
        "small.mzML.gz.mzpeak",
    ]


def test_info_summarises(tmp_path) -> None:
    output = tmp_path / "small.mzpeak"
    assert run_cli("convert", str(SMALL), str(output), "--cluster", "inline", "-q").returncode == 0
    result = run_cli("info", str(output))
    assert result.returncode == 0
    text = result.stdout
    assert "spectra        48 (MS1 14, MS2 34); 243,054 points" in text
    assert "chromatograms  1 (total ion current chromatogram 1)" in text
    assert "LTQ FT" in text and "spectra_data.parquet" in text
    summary = json.loads(run_cli("info", str(output), "--json").stdout)
    assert summary["ms_levels"] == {"1": 14, "2": 34}


def test_cluster_script_without_slurm() -> None:
    result = run_cli("cluster-script", "--config", str(ROOT / "configs" / "slurm.toml"))
    assert result.returncode == 0, result.stderr
    script = result.stdout
    assert "#SBATCH -p normal" in script and "#SBATCH -A myproject" in script
    assert "--cpus-per-task=8" in script and "--nworkers 4" in script
    assert "export ZARR_ARRAY__RECTILINEAR_CHUNKS=True" in script  # the workers export Zarr
    assert result.stderr.strip() == ""


def test_dask_and_tornado_logs_are_quiet_unless_verbose() -> None:
    """A Ctrl-C landing inside one of distributed's event-loop calls makes tornado log a
    traceback at ERROR; without --verbose, the command's own one line is all a user sees, in
    this process and in the workers it starts (they get Dask's logging config)."""
    probe = (
        "import logging, sys\n"
        "from mzpeak_dask.cli.logs import quiet_dask_logs\n"
        "if sys.argv[1] == 'before': quiet_dask_logs()\n"
        "import distributed\n"
        "if sys.argv[1] == 'after': quiet_dask_logs()\n"
        "import dask\n"
        "print(logging.getLogger('tornado.application').level,"
        " logging.getLogger('distributed').level,"
        " dask.config.get('logging')['tornado.application'])\n"
    )
    for when in ("before", "after"):
        out = subprocess.run(
            [sys.executable, "-c", probe, when], capture_output=True, text=True, check=True
        )
        assert out.stdout.split() == [str(logging.CRITICAL), str(logging.CRITICAL), "critical"]


def test_quieting_dask_keeps_the_users_own_dask_logging_settings() -> None:
    """``DASK_LOGGING`` set by the user (other loggers' levels) keeps its settings beside the
    command's, before and after Dask is imported."""
    probe = (
        "import sys\n"
        "from mzpeak_dask.cli.logs import quiet_dask_logs\n"
        "if sys.argv[1] == 'before': quiet_dask_logs()\n"
        "import dask, distributed\n"
        "if sys.argv[1] == 'after': quiet_dask_logs()\n"
        "print(repr(dask.config.get('logging')))\n"
    )
    for when in ("before", "after"):
        env = {**os.environ, "DASK_LOGGING": "{'bokeh': 'error', 'distributed': 'info'}"}
        out = subprocess.run(
            [sys.executable, "-c", probe, when], capture_output=True, text=True, env=env
        )
        assert out.returncode == 0, out.stderr
        config = ast.literal_eval(out.stdout.strip())
        assert config["bokeh"] == "error", (when, config)
        assert config["distributed"] == config["tornado.application"] == "critical", (when, config)


EXIT_PROBE = """
import atexit, sys
sys.argv = ["mzpeak-dask", *sys.argv[1:]]
from mzpeak_dask.cli import run

atexit.register(lambda: print("atexit ran"))
run()
"""


def test_the_command_exits_with_its_status(tmp_path) -> None:
    """The entry point (the console script and ``python -m``) exits as usual with the command's
    status, and its atexit handlers run."""
    output = tmp_path / "small.mzpeak"
    assert run_cli("convert", str(SMALL), str(output), "--cluster", "inline", "-q").returncode == 0

    def probe(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", EXIT_PROBE, *args], capture_output=True, text=True, timeout=300
        )

    done = probe("info", str(output))
    assert done.returncode == 0, done.stderr
    assert "spectra        48" in done.stdout
    assert done.stdout.rstrip().endswith("atexit ran")
    failed = probe("info", str(tmp_path / "missing.mzpeak"))
    assert failed.returncode != 0 and "error: " in failed.stderr
    assert "atexit ran" in failed.stdout
    script = (Path(sys.executable).parent / "mzpeak-dask").read_text()
    assert "from mzpeak_dask.cli import run" in script
