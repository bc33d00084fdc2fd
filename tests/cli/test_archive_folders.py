"""``info`` and ``validate`` given a folder of archives, as a batch leaves one: every archive
under it, in path order (its Zarr runs, hidden staging and other files left out), each under
its own name; and a command whose reader stops early (``| head``) stops quietly."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mzpeak_dask import ConvertOptions, convert
from mzpeak_dask.export.zarr import to_zarr

from ..conftest import BUNDLED, DATA, INLINE
from ..helpers.cli import one_line_error, run_cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """A batch's output, as far as these commands see it: two archives in folders of their
    own, a Zarr export, a hidden staging folder holding garbage, a report and notes."""
    root = tmp_path_factory.mktemp("converted")
    for source, name in (
        (BUNDLED / "small.mzML", "mzdata/small.mzpeak"),
        (DATA / "depthcharge" / "TMT10-Trial-8.mzML", "depthcharge/TMT10-Trial-8.mzpeak"),
    ):
        (root / name).parent.mkdir(exist_ok=True)
        convert(source, root / name, ConvertOptions(), cluster=INLINE)
    to_zarr([root / "mzdata" / "small.mzpeak"], root / "exports" / "runs.zarr", cluster=INLINE)
    (root / ".staging.tmp").mkdir()
    (root / ".staging.tmp" / "half.mzpeak").write_bytes(b"PK\x03\x04 not yet")
    (root / "batch_report.json").write_text("{}")
    (root / "notes.txt").write_text("converted on Monday")
    return root


def test_validate_checks_every_archive_under_a_folder(converted, tmp_path) -> None:
    done = run_cli("validate", str(converted))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"{converted}/depthcharge/TMT10-Trial-8.mzpeak: valid",
        f"{converted}/mzdata/small.mzpeak: valid",
    ]
    damaged = tmp_path / "converted"
    damaged.mkdir()
    good = damaged / "good.mzpeak"
    good.write_bytes((converted / "mzdata" / "small.mzpeak").read_bytes())
    (damaged / "cut.mzpeak").write_bytes(good.read_bytes()[:5000])
    done = run_cli("validate", str(damaged))
    assert done.returncode == 1 and not done.stderr
    assert done.stdout.splitlines() == [
        f"{damaged}/cut.mzpeak: error: not a ZIP archive (nor a directory)",
        f"{damaged}/good.mzpeak: valid",
    ]


def test_info_summarizes_every_archive_under_a_folder(converted) -> None:
    done = run_cli("info", str(converted), "--json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count('"path": ') == 2
    assert f'"path": "{converted}/mzdata/small.mzpeak"' in done.stdout


def test_a_folder_without_archives_is_one_line(converted, tmp_path) -> None:
    for command in ("info", "validate"):
        one_line_error(run_cli(command, str(converted / "exports")), "no mzPeak archive in it")


def test_output_cut_short_by_its_reader_stops_quietly(converted, tmp_path) -> None:
    """``mzpeak-dask info FOLDER | head -1``: once the pipe is closed the command stops,
    exit status 141 (128 + SIGPIPE) and nothing on stderr, not an 'internal error'."""
    runs = [str(tmp_path / f"run{k:03d}.mzpeak") for k in range(300)]  # more summaries
    for run in runs:  # than a pipe's buffer holds
        os.link(converted / "mzdata" / "small.mzpeak", run)
    command = [sys.executable, "-m", "mzpeak_dask", "info", *runs]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout.readline().startswith(str(tmp_path).encode())
        process.stdout.close()
        _, said = process.communicate(timeout=300)
    assert process.returncode == 141, said
    assert said == b""
