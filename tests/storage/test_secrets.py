"""A password in a URL (``http://user:secret@host/...``) and the storage options given on the
command line are shown nowhere: not in error lines, results, progress, reports, the catalog or
the archive's own record of its source (the URL shows as ``user:***@``), and not in the command
lines of the worker processes a conversion starts."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import time

import psutil
import pyarrow.parquet as pq
import pytest

from mzpeak_dask import convert

from ..conftest import BUNDLED, DATA, INLINE
from ..helpers.cli import one_line_error, run_cli
from ..helpers.servers import range_server, s3_client

SECRET = "s3cr3tPASSWORD"


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    """A Range-capable HTTP server over small.mzML and a corrupt mzML; URLs carry a password."""
    root = tmp_path_factory.mktemp("web")
    shutil.copy(BUNDLED / "small.mzML", root / "small.mzML")
    shutil.copy(DATA / "openms" / "FileFilter_39_input_corrupt.mzML", root / "broken.mzML")
    convert(root / "small.mzML", root / "small.mzpeak", cluster=INLINE)
    with range_server(root) as server:
        yield server.url.replace("http://", f"http://user:{SECRET}@")


def _shown(result: subprocess.CompletedProcess) -> str:
    return result.stdout + result.stderr


@pytest.mark.server
def test_a_failing_conversion_hides_the_password(web, tmp_path):
    source = f"{web}/missing.mzML"
    result = run_cli("convert", source, str(tmp_path / "out.mzpeak"), "--cluster", "inline")
    one_line_error(result, source.replace(SECRET, "***"))
    assert SECRET not in _shown(result)


@pytest.mark.server
def test_verbose_tracebacks_hide_the_password(web, tmp_path):
    source = f"{web}/missing.mzML"
    result = run_cli("convert", source, str(tmp_path / "o.mzpeak"), "--cluster", "inline", "-v")
    assert result.returncode == 1 and "Traceback" in result.stderr
    assert SECRET not in _shown(result)


def test_credentials_in_an_s3_url_are_refused_unshown(s3_endpoint, bucket, tmp_path):
    source = f"s3://AKIAEXAMPLE:{SECRET}@{bucket}/in/a.mzML"
    result = run_cli(
        "convert", source, str(tmp_path / "o.mzpeak"), "--cluster", "inline",
        env=os.environ.copy(),
    )  # fmt: skip
    one_line_error(result, f"s3://AKIAEXAMPLE:***@{bucket}/in/a.mzML", "cannot carry credentials")
    assert SECRET not in _shown(result)


@pytest.mark.server
def test_a_conversion_hides_the_password_in_its_lines_and_archive(web, tmp_path):
    output = tmp_path / "out.mzpeak"
    source = f"{web}/small.mzML"
    result = run_cli("convert", source, str(output), "--cluster", "inline", "--json")
    assert result.returncode == 0, result.stderr
    assert SECRET not in _shown(result)
    shown = json.loads(result.stdout)
    assert shown["input"] == shown["input_uri"] == source.replace(SECRET, "***")
    data = output.read_bytes()
    assert b"user:***@127.0.0.1" in data  # the source's location, recorded without its password
    assert SECRET.encode() not in data
    progress = run_cli("convert", source, str(tmp_path / "b.mzpeak"), "--cluster", "inline")
    assert progress.returncode == 0 and SECRET not in _shown(progress)


@pytest.mark.server
@pytest.mark.parametrize("command", [["info"], ["info", "--json"], ["validate", "--json"]])
def test_reading_an_archive_hides_the_password(web, command):
    result = run_cli(*command, f"{web}/small.mzpeak")
    assert result.returncode == 0, result.stderr
    assert "user:***@127.0.0.1" in result.stdout and SECRET not in _shown(result)


@pytest.mark.server
def test_a_batch_of_urls_hides_the_password_in_its_reports(web, s3_endpoint, bucket, tmp_path):
    manifest = tmp_path / "urls.txt"
    manifest.write_text(f"{web}/small.mzML\n{web}/broken.mzML\n")
    result = run_cli(
        "batch",
        str(manifest),
        f"s3://{bucket}/out",
        "--cluster",
        "inline",
        "--state-dir",
        str(tmp_path / "state"),
        env=os.environ.copy(),
    )
    assert result.returncode == 1, result.stderr
    assert "broken.mzML" in result.stderr and SECRET not in _shown(result)
    client = s3_client(s3_endpoint)
    keys = [k["Key"] for k in client.list_objects_v2(Bucket=bucket)["Contents"]]
    assert {"out/batch_report.json", "out/batch_report.html", "out/catalog.parquet"} <= set(keys)
    assert any(k.endswith(".mzpeak") for k in keys)
    for key in keys:
        assert SECRET not in key
        data = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        assert SECRET.encode() not in data, key
    catalog = client.get_object(Bucket=bucket, Key="out/catalog.parquet")["Body"].read()
    rows = pq.read_table(io.BytesIO(catalog)).to_pylist()
    assert [r["source"] for r in rows] == [f"{web}/small.mzML".replace(SECRET, "***")]
    state = tmp_path / "state" / "remote_state.json"  # the batch's state, kept locally
    assert SECRET not in state.read_text()
    assert f"{web}/small.mzML".replace(SECRET, "***") in json.loads(state.read_text())
    assert state.stat().st_mode & 0o777 == 0o600  # readable by its owner only


def test_the_state_of_a_local_batch_is_readable_by_its_owner_only(tmp_path):
    from mzpeak_dask.batch.runner import run_batch

    source = tmp_path / "in"
    source.mkdir()
    shutil.copy(BUNDLED / "small.mzML", source / "small.mzML")
    run_batch(source, tmp_path / "out", cluster=INLINE)
    (state,) = (tmp_path / "out").glob("*.sqlite")
    assert state.stat().st_mode & 0o777 == 0o600


@pytest.mark.cluster
def test_storage_options_are_not_on_the_workers_command_lines(tmp_path):
    """The workers of a LocalCluster show no storage option given with --storage-options; nor
    does the command itself once they run."""
    options = json.dumps({"key": "AKIAEXAMPLE", "secret": SECRET})
    command = [sys.executable, "-m", "mzpeak_dask", "convert", str(DATA / "mzdata" / "small.mzML")]
    command += [str(tmp_path / "out.mzpeak"), "--workers", "2", "--no-dashboard"]
    process = subprocess.Popen(
        [*command, "--storage-options", options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: dict[int, str] = {}
    deadline = time.monotonic() + 300
    try:
        coordinator = psutil.Process(process.pid)
        while process.poll() is None and time.monotonic() < deadline:
            try:
                children = coordinator.children(recursive=True)
                for child in children:
                    seen[child.pid] = " ".join(child.cmdline())
                if children:
                    seen[process.pid] = " ".join(coordinator.cmdline())
            except psutil.Error:  # a process that ended as it was looked at
                pass
            time.sleep(0.02)
        assert process.wait(timeout=max(1, deadline - time.monotonic())) == 0, process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert len(seen) >= 3, seen  # the command and its two workers were looked at
    assert not [line for line in seen.values() if SECRET in line]
    with process.stderr:
        assert SECRET not in process.stderr.read()


def test_the_value_is_hidden_however_the_flag_is_spelt():
    from mzpeak_dask.cli.hidden import masked

    line = b'python\0-m\0mzpeak_dask\0info\0--storage-opt\0{"k": 1}\0--storage-options={}\0x\0'
    assert masked(line) == line.replace(b'{"k": 1}', b"********").replace(b"={}", b"=**")
    assert masked(b"a\0--state-dir\0x\0") == b"a\0--state-dir\0x\0"


def test_the_note_of_an_input_url_is_readable_by_its_owner_only(tmp_path):
    from mzpeak_dask.storage.origins import mark_origin, origin_of

    copy = tmp_path / "small.mzML"
    url = f"http://user:{SECRET}@127.0.0.1:1/small.mzML"
    mark_origin(copy, url)
    (note,) = tmp_path.iterdir()
    assert note.stat().st_mode & 0o777 == 0o600
    assert origin_of(copy) == url  # the workers reading the object need it whole
