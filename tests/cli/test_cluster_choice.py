"""Where a conversion runs: with ``cluster = "auto"`` (the default) a small input converts in
this process (a LocalCluster's start would cost more than it saves) and a large one on a
LocalCluster, and one line on stderr says so; --workers, --cluster, --scheduler or a config
file's [cluster] force the choice (the user chose: no line)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mzpeak_dask import ClusterOptions
from mzpeak_dask.parallel.where import cluster_pays, describe, resolve, work_bytes

from ..conftest import BUNDLED, DATA
from ..helpers.cli import run_cli

SMALL = BUNDLED / "small.mzML"
SMALL_GZ = DATA / "mzdata" / "small.mzML.gz"


def choose_cluster(inputs: list[Path], given: ClusterOptions | None = None):
    """Where ``inputs`` convert, and the line saying so, as ``convert`` decides."""
    size = work_bytes(inputs)
    chosen = resolve(given or ClusterOptions(), size)
    return chosen, describe(chosen, size)


def test_the_cluster_pays_only_for_large_work() -> None:
    assert not cluster_pays(3_400_000, 2)
    assert not cluster_pays(40_000_000, 2)
    assert not cluster_pays(80_000_000, 2)
    assert cluster_pays(100_000_000, 2)
    assert cluster_pays(500_000_000, 2)
    # more workers: the start pays back sooner; one worker never beats this process
    assert not cluster_pays(40_000_000, 8)
    assert cluster_pays(80_000_000, 8)
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
    assert line == "running in-process (3.3 MiB input)"


def test_a_large_input_starts_a_local_cluster(tmp_path: Path) -> None:
    large = tmp_path / "large.mzML"  # only its size is looked at
    with open(large, "wb") as f:
        f.truncate(2_000_000_000)
    cluster, line = choose_cluster([large])
    workers = os.cpu_count() or 1
    if workers == 1:
        assert cluster.cluster == "inline"
        return
    assert cluster == ClusterOptions(cluster="local")
    assert line == f"starting a LocalCluster of {workers} workers (1.9 GiB input)"


def test_the_users_cluster_options_shape_the_cluster_the_size_of_the_work_starts(
    tmp_path: Path,
) -> None:
    """Only where to run is left to the size of the work: a memory limit, threads, a window or
    a dashboard the user gave shape the LocalCluster it starts (they were dropped)."""
    large = tmp_path / "large.mzML"
    with open(large, "wb") as f:
        f.truncate(2_000_000_000)
    shape = ClusterOptions(memory_limit="3GB", threads_per_worker=2, window=5, dashboard=True)
    cluster, _ = choose_cluster([large], shape)
    if (os.cpu_count() or 1) > 1:
        assert cluster == shape.updated(cluster="local")
    small, line = choose_cluster([SMALL], shape)
    assert small == shape.updated(cluster="inline") and line.startswith("running in-process")


@pytest.mark.cluster
@pytest.mark.slow
def test_the_command_line_starts_the_cluster_its_options_shape(tmp_path: Path) -> None:
    """``convert --dashboard`` of a large input: the LocalCluster the size of the work starts
    is asked for a dashboard (without bokeh installed, it says why none is served), and the
    input, not an MS file, fails in one line with no output."""
    if (os.cpu_count() or 1) == 1:
        pytest.skip("one core: a large input also converts in this process")
    large = tmp_path / "large.mzML"  # only its size is looked at before the cluster starts
    with open(large, "wb") as f:
        f.truncate(2_000_000_000)
    result = run_cli("convert", str(large), str(tmp_path / "out.mzpeak"), "--dashboard")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith("starting a LocalCluster of")
    bokeh = any(line.endswith("(pip install bokeh): none is served") for line in lines)
    served = any("Dask dashboard: " in line for line in lines)
    assert bokeh or served, result.stderr
    assert lines[-1] == (
        f"error: {large}: not a recognised MS data file (expected mzML, mzXML, MGF, mzMLb, "
        "a Thermo .raw file or a Bruker .d folder)"
    )
    assert not (tmp_path / "out.mzpeak").exists()


@pytest.mark.parametrize(
    ("given", "line"),
    [
        (ClusterOptions(cluster="inline"), "running in-process"),
        (ClusterOptions(cluster="local"), "starting a LocalCluster of"),
        (ClusterOptions(workers=1), "starting a LocalCluster of 1 worker"),
        (ClusterOptions(workers=3), "starting a LocalCluster of 3 workers"),
        (
            ClusterOptions(scheduler="tcp://127.0.0.1:1"),
            "running on the Dask scheduler at tcp://127.0.0.1:1",
        ),
    ],
)
def test_given_options_force_the_choice(given: ClusterOptions, line: str) -> None:
    chosen, said = choose_cluster([SMALL], given)
    assert chosen.cluster != "auto" and said.startswith(line)
    assert said.endswith("(3.3 MiB input)")


def _stderr_lines(result: subprocess.CompletedProcess) -> list[str]:
    assert result.returncode == 0, result.stderr
    return [
        line for line in result.stderr.splitlines() if not line.startswith(("done ", "converting "))
    ]


@pytest.mark.cluster
@pytest.mark.slow
def test_the_command_line_shows_the_choice_and_flags_force_it(tmp_path: Path) -> None:
    output = str(tmp_path / "small.mzpeak")
    chosen = run_cli("convert", str(SMALL), output)
    assert _stderr_lines(chosen) == ["running in-process (3.3 MiB input)"]
    forced = run_cli("convert", str(SMALL), output, "--overwrite", "--workers", "1")
    assert _stderr_lines(forced) == []  # the user chose
    config = tmp_path / "inline.toml"
    config.write_text('[cluster]\ncluster = "inline"\n')
    configured = run_cli("convert", str(SMALL), output, "--overwrite", "--config", str(config))
    assert _stderr_lines(configured) == []
    # a [cluster] key that only shapes a cluster leaves the choice to the size of the work
    config.write_text("[cluster]\nthreads_per_worker = 2\n")
    shaped = run_cli("convert", str(SMALL), output, "--overwrite", "--config", str(config))
    assert _stderr_lines(shaped) == ["running in-process (3.3 MiB input)"]
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
