"""Inputs that are not regular files — a FIFO, a socket, a character device (``/dev/zero``), a
folder — are refused in one line naming them, before they are opened (opening a FIFO for
reading waits for a writer forever; ``/dev/zero`` never ends). In a batch such a file is a
failed row, and the other inputs convert."""

from __future__ import annotations

import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from ..conftest import BUNDLED
from ..helpers.cli import one_line_error, run_cli

DEADLINE = 180  # a generous bound: the run waiting for a writer would never end


def _socket_file(folder: Path) -> Path:
    path = folder / "run.mzML"
    if len(os.fsencode(path)) >= 100:  # AF_UNIX names are short
        pytest.skip("the temporary folder's path is too long for a socket")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()  # the file stays
    return path


@pytest.mark.parametrize("kind", ["fifo", "socket", "device"])
def test_convert_refuses_a_file_that_is_not_regular(tmp_path, kind):
    if kind == "fifo":
        source = tmp_path / "run.mzML"
        os.mkfifo(source)
    elif kind == "socket":
        source = _socket_file(tmp_path)
    else:
        source = Path("/dev/zero")
    output = tmp_path / "out.mzpeak"
    result = run_cli("convert", str(source), str(output), "--cluster", "inline", timeout=DEADLINE)
    one_line_error(result, str(source), "not a regular file")
    assert not output.exists()


@pytest.mark.cluster
@pytest.mark.slow  # the command asks for a LocalCluster of one worker (--workers 1)
def test_convert_refuses_a_fifo_on_a_local_cluster(tmp_path):
    source = tmp_path / "run.mzML"
    os.mkfifo(source)
    result = run_cli(
        "convert", str(source), str(tmp_path / "out.mzpeak"), "--workers", "1",
        "--no-dashboard", timeout=DEADLINE,
    )  # fmt: skip
    one_line_error(result, str(source), "not a regular file")


@pytest.mark.slow  # a batch run through the command line
def test_a_fifo_in_a_batch_is_a_failed_row_and_the_others_convert(tmp_path):
    folder = tmp_path / "repo"
    folder.mkdir()
    shutil.copy(BUNDLED / "small.mzML", folder / "small.mzML")
    os.mkfifo(folder / "pipe.mzML")
    output = tmp_path / "out"
    result = run_cli(
        "batch", str(folder), str(output), "--cluster", "inline", "--no-dashboard",
        timeout=DEADLINE,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    failed = [line for line in result.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == 1 and "pipe.mzML" in failed[0] and "not a regular file" in failed[0]
    files = {
        Path(f["input"]).name: f
        for f in json.loads((output / "batch_report.json").read_text())["files"]
    }
    assert files["small.mzML"]["status"] == "converted"
    assert files["pipe.mzML"]["status"] == "failed"
    assert (output / "small.mzpeak").is_file() and not (output / "pipe.mzpeak").exists()


def test_a_fifo_as_the_manifest_of_a_batch_of_urls_is_refused(tmp_path):
    manifest = tmp_path / "urls.txt"
    os.mkfifo(manifest)
    result = run_cli(
        "batch", str(manifest), "s3://bucket/out", "--state-dir", str(tmp_path / "state"),
        timeout=DEADLINE,
    )  # fmt: skip
    one_line_error(result, str(manifest), "not a regular file")


@pytest.mark.parametrize("command", ["info", "validate", "export-zarr", "xic"])
def test_a_fifo_as_an_archive_is_refused(tmp_path, command):
    """A command that reads archives refuses a FIFO in one line before opening it (an open
    for reading would wait for a writer for ever)."""
    archive = tmp_path / "run.mzpeak"
    os.mkfifo(archive)
    more = {
        "export-zarr": [str(tmp_path / "runs.zarr"), "--cluster", "inline"],
        "xic": ["--mz", "445.12"],
    }.get(command, [])
    result = run_cli(command, str(archive), *more, timeout=DEADLINE)
    if command == "validate":  # a report: a line per archive, its problems after its name
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert [line for line in result.stdout.splitlines() + result.stderr.splitlines()] == [
            f"{archive}: error: not a regular file, not an archive"
        ]
    else:
        one_line_error(result, str(archive), "not a regular file")
    assert not (tmp_path / "runs.zarr").exists()
