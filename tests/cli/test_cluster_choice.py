"""Where a conversion runs: given no cluster, a small input converts in this process (a
LocalCluster's start would cost more than it saves) and a large one on a LocalCluster; the
choice is one line on stderr, and --workers, --cluster, --scheduler or a config file's
[cluster] force it (the user chose: no line)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mzpeak_dask import ClusterOptions
from mzpeak_dask.convert import choose_cluster, cluster_pays, work_bytes

from ..conftest import BUNDLED, DATA
from ..helpers import run_cli

SMALL = BUNDLED / "small.mzML"
SMALL_GZ = DATA / "mzdata" / "small.mzML.gz"


def test_the_cluster_pays_only_for_large_work() -> None:
    assert not cluster_pays(3_400_000, 2)
    assert not cluster_pays(40_000_000, 2)
    assert cluster_pays(100_000_000, 2)
    assert cluster_pays(500_000_000, 2)
    # more workers: the start pays back sooner; one worker never beats this process
    assert cluster_pays(40_000_000, 8)
    assert not cluster_pays(3_400_000, 8)
    assert not cluster_pays(10**12, 1)


def test_compressed_inputs_count_as_what_they_expand_to() -> None:
    assert work_bytes([SMALL]) == SMALL.stat().st_size
    assert work_bytes([SMALL_GZ]) == 4 * SMALL_GZ.stat().st_size
    assert work_bytes([SMALL, SMALL_GZ, SMALL.with_name("missing.mzML")]) == (
        SMALL.stat().st_size + 4 * SMALL_GZ.stat().st_size
    )


def test_a_small_input_runs_in_process() -> None:
    cluster, line = choose_cluster([SMALL])
    assert cluster.cluster == "inline"
    assert line == "running in-process (3.4 MB input)"


def test_a_large_input_starts_a_local_cluster(tmp_path: Path) -> None:
    large = tmp_path / "large.mzML"  # only its size is looked at
    with open(large, "wb") as f:
        f.truncate(2_000_000_000)
    cluster, line = choose_cluster([large])
    workers = os.cpu_count() or 1
    if workers == 1:
        assert cluster.cluster == "inline"
        return
    assert cluster.cluster == "local" and cluster.workers is None
    assert line == f"starting a LocalCluster of {workers} workers (2,000.0 MB input)"


@pytest.mark.parametrize(
    ("given", "line"),
    [
        (ClusterOptions(cluster="inline"), "running in-process"),
        (ClusterOptions(workers=1), "starting a LocalCluster of 1 worker"),
        (ClusterOptions(workers=3), "starting a LocalCluster of 3 workers"),
        (
            ClusterOptions(scheduler="tcp://127.0.0.1:1"),
            "running on the Dask scheduler at tcp://127.0.0.1:1",
        ),
    ],
)
def test_given_options_force_the_choice(given: ClusterOptions, line: str) -> None:
    assert choose_cluster([SMALL], given) == (given, line)


def _stderr_lines(result: subprocess.CompletedProcess) -> list[str]:
    assert result.returncode == 0, result.stderr
    return [
        line for line in result.stderr.splitlines() if not line.startswith(("done ", "converting "))
    ]


@pytest.mark.slow
def test_the_command_line_shows_the_choice_and_flags_force_it(tmp_path: Path) -> None:
    output = str(tmp_path / "small.mzpeak")
    chosen = run_cli("convert", str(SMALL), output)
    assert _stderr_lines(chosen) == ["running in-process (3.4 MB input)"]
    forced = run_cli("convert", str(SMALL), output, "--overwrite", "--workers", "1")
    assert _stderr_lines(forced) == []
    config = tmp_path / "inline.toml"
    config.write_text('[cluster]\ncluster = "inline"\n')
    configured = run_cli("convert", str(SMALL), output, "--overwrite", "--config", str(config))
    assert _stderr_lines(configured) == []
    # a [cluster] key that only shapes a cluster leaves the choice to the size of the work
    config.write_text("[cluster]\nthreads_per_worker = 2\n")
    shaped = run_cli("convert", str(SMALL), output, "--overwrite", "--config", str(config))
    assert _stderr_lines(shaped) == ["running in-process (3.4 MB input)"]
    quiet = run_cli("convert", str(SMALL), output, "--overwrite", "-q")
    assert quiet.returncode == 0 and quiet.stderr == ""


@pytest.mark.slow
def test_an_in_process_conversion_never_starts_dask(tmp_path: Path) -> None:
    code = (
        "import sys; from mzpeak_dask import convert; "
        f"convert({str(SMALL)!r}, {str(tmp_path / 'o.mzpeak')!r}); "
        "print('distributed' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
