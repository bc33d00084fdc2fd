"""Errors and warnings about a run name it as the user did, whatever this process read in its
place: a URL read by ranges, a URL downloaded into a staging folder, a gzip input decompressed
into one. The command's error line, the API's exceptions and warnings, and a batch's records
name the path or URL given, the spectrum where one is at fault, and never a staging path."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from mzpeak_dask import convert
from mzpeak_dask.cli.convert import EXIT_FAILED
from mzpeak_dask.errors import InputError

from ..conftest import DATA, INLINE
from ..helpers.cli import one_line_error, run_cli
from ..helpers.servers import s3_client

BROKEN = DATA / "openms" / "FileFilter_39_input_corrupt.mzML"  # spectrum 1's data is corrupt
AT_FAULT = "spectrum spectrum=1: cannot decode binary data"
REPEATING = DATA / "openms" / "FileConverter_30_output.mzML"  # repeated spectrum ids
STAGED = (".mzpeak-dask-staging", ".tmp", "input-")  # parts of staging paths and file names


def _staged_text(text: str, *folders: Path) -> list[str]:
    """The parts of staging paths (or the given folders) that ``text`` holds."""
    return [s for s in (*STAGED, *map(str, folders)) if s in text]


def _gzip(source: Path, target: Path, keep: int | None = None) -> Path:
    data = gzip.compress(source.read_bytes())
    target.write_bytes(data[:keep] if keep is not None else data)
    return target


def _env(tmp: Path) -> dict[str, str]:
    """The environment of a command whose temporary folder (its staging folders) is ``tmp``."""
    tmp.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmp)}


def test_a_broken_gzip_input_is_named_as_given(tmp_path):
    """A gzip input is decompressed into the run's staging folder and read there: its errors
    name the .gz path given, and the spectrum at fault."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    broken = _gzip(BROKEN, inputs / "broken.mzML.gz")
    truncated = _gzip(REPEATING, inputs / "truncated.mzML.gz", keep=5000)
    for source, fault in ((broken, AT_FAULT), (truncated, "corrupt gzip data")):
        output = tmp_path / f"{source.name}.mzpeak"
        result = run_cli("convert", str(source), str(output), "--cluster", "inline")
        assert result.returncode == EXIT_FAILED, result.stderr
        one_line_error(result, f"error: {source}: {fault}")
        assert _staged_text(result.stderr) == [], result.stderr
        assert sorted(tmp_path.iterdir()) == [inputs]  # no output, no staging folder left


@pytest.mark.parametrize("key", ["in/broken.mzML", "in/broken.mzML.gz"])
def test_a_broken_input_url_is_named_by_its_url(s3_endpoint, bucket, tmp_path, key):
    """Read by ranges where it lies (mzML) or downloaded into a staging folder and decompressed
    into another (mzML.gz), to an output key: the error line names the URL and the spectrum."""
    body = gzip.compress(BROKEN.read_bytes()) if key.endswith(".gz") else BROKEN.read_bytes()
    s3_client(s3_endpoint).put_object(Bucket=bucket, Key=key, Body=body)
    url = f"s3://{bucket}/{key}"
    tmp = tmp_path / "tmp"
    result = run_cli(
        "convert", url, f"s3://{bucket}/out/run.mzpeak", "--cluster", "inline", env=_env(tmp)
    )
    assert result.returncode == EXIT_FAILED, result.stderr
    one_line_error(result, f"error: {url}: {AT_FAULT}")
    assert _staged_text(result.stderr, tmp) == [], result.stderr
    assert list(tmp.iterdir()) == []  # the staging folders are gone


def test_errors_and_warnings_of_input_urls_name_the_urls(s3_endpoint, bucket, tmp_path):
    """Through the API: a truncated gzip object's error, and the repeated ids' warning of an
    object read by ranges and of one downloaded, name their URLs."""
    client = s3_client(s3_endpoint)
    client.upload_file(str(REPEATING), bucket, "in/repeating.mzML")
    client.upload_file(str(_gzip(REPEATING, tmp_path / "r.gz")), bucket, "in/repeating.mzML.gz")
    truncated = _gzip(REPEATING, tmp_path / "t.gz", keep=5000)
    client.upload_file(str(truncated), bucket, "in/truncated.mzML.gz")
    url = f"s3://{bucket}/in/truncated.mzML.gz"
    with pytest.raises(InputError) as failed:
        convert(url, tmp_path / "t.mzpeak", cluster=INLINE)
    assert str(failed.value).startswith(f"{url}: corrupt gzip data")
    for name in ("repeating.mzML", "repeating.mzML.gz"):
        url = f"s3://{bucket}/in/{name}"
        result = convert(url, tmp_path / f"{name}.mzpeak", cluster=INLINE)
        [warning] = result.warnings
        assert warning.startswith(f"{url}: 228 spectra repeat the id"), warning
        assert _staged_text(warning, tmp_path) == [], warning


@pytest.mark.slow
def test_a_batch_of_urls_names_its_broken_inputs_by_url(s3_endpoint, bucket, tmp_path):
    """A batch of URLs converts in a local staging tree: its failed lines and its report's
    records name each broken input's URL (and the spectrum), never a path of that tree."""
    client = s3_client(s3_endpoint)
    client.upload_file(str(REPEATING), bucket, "raw/good.mzML")
    client.upload_file(str(BROKEN), bucket, "raw/broken.mzML")
    client.upload_file(str(_gzip(BROKEN, tmp_path / "b.gz")), bucket, "raw/z/broken.mzML.gz")
    state, tmp = tmp_path / "state", tmp_path / "tmp"
    done = run_cli(
        "batch",
        f"s3://{bucket}/raw",
        f"s3://{bucket}/out",
        "--cluster",
        "inline",
        "--state-dir",
        str(state),
        env=_env(tmp),
    )
    assert done.returncode == EXIT_FAILED, done.stderr
    assert "Traceback" not in done.stderr and "error:" not in done.stderr
    bad = [f"s3://{bucket}/raw/broken.mzML", f"s3://{bucket}/raw/z/broken.mzML.gz"]
    failed = [line for line in done.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == len(bad), done.stderr
    for url in bad:
        assert any(line.startswith(f"failed: {url}: {AT_FAULT}") for line in failed), failed
    assert _staged_text(done.stderr, state, tmp) == [], done.stderr
    report = client.get_object(Bucket=bucket, Key="out/batch_report.json")["Body"].read()
    rows = {row["input"]: row for row in json.loads(report)["files"]}
    assert sorted(rows) == sorted([*bad, f"s3://{bucket}/raw/good.mzML"])
    for url in bad:
        row = rows[url]
        assert row["status"] == "failed" and row["error"].startswith(f"{url}: {AT_FAULT}"), row
        assert _staged_text(json.dumps(row), state, tmp) == [], row
    assert rows[f"s3://{bucket}/raw/good.mzML"]["output"] == f"s3://{bucket}/out/good.mzpeak"
