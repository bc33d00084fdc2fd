"""A batch into a bucket when something fails under it: an archive the store refuses to take
after its retries fails that input alone (its row, the others uploaded and recorded for the
resume); a state folder on a full disk is one line naming the state file, which keeps the
rows of the batches before (no temporary file left beside it)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
from pathlib import Path

import pytest

from ..conftest import BUNDLED
from ..helpers.cli import one_line_error, run_cli
from ..helpers.fault_proxy import fault_proxy
from ..helpers.s3 import keys, uploads
from ..helpers.servers import moto_requests, s3_client

pytestmark = [pytest.mark.cluster, pytest.mark.slow]  # moto's server on loopback
REPORTS = ["mzpeak/batch_report.html", "mzpeak/batch_report.json", "mzpeak/catalog.parquet"]


def _inputs(endpoint: str, bucket: str, *names: str) -> None:
    client = s3_client(endpoint)
    for name in names:
        client.upload_file(str(BUNDLED / "small.mzML"), bucket, f"raw/{name}.mzML")


def _batch(bucket: str, state: Path, *more: str, env: dict[str, str] | None = None):
    command = ["batch", f"s3://{bucket}/raw", f"s3://{bucket}/mzpeak", "--cluster", "inline"]
    return run_cli(*command, "--state-dir", str(state), *more, env=env or os.environ.copy())


def _report(endpoint: str, bucket: str) -> dict[str, str]:
    body = s3_client(endpoint).get_object(Bucket=bucket, Key="mzpeak/batch_report.json")["Body"]
    return {f["input"].rsplit("/", 1)[1]: f["status"] for f in json.loads(body.read())["files"]}


def test_an_upload_the_store_keeps_failing_fails_its_input_alone(s3_endpoint, bucket, tmp_path):
    _inputs(s3_endpoint, bucket, "a", "b", "c")
    state = tmp_path / "state"
    with fault_proxy(s3_endpoint) as proxy:
        proxy.fail_puts(1000, containing="/mzpeak/b.mzpeak")  # every call of every retry
        env = {**os.environ, "AWS_ENDPOINT_URL": proxy.url}
        first = _batch(bucket, state, env=env)
        assert proxy.injected["put-error"] >= 4  # tried again before giving up
    assert first.returncode == 1, first.stderr
    lines = first.stderr.splitlines()
    assert not [line for line in lines if line.startswith("error:")], first.stderr
    failed = [line for line in lines if line.startswith("failed:")]
    assert len(failed) == 1, first.stderr
    assert f"s3://{bucket}/raw/b.mzML" in failed[0] and "upload failed" in failed[0], failed
    assert "server error (500 InternalError)" in failed[0], failed
    assert keys(s3_endpoint, bucket) == sorted(
        ["mzpeak/a.mzpeak", "mzpeak/c.mzpeak", *REPORTS] + [f"raw/{n}.mzML" for n in "abc"]
    )
    assert uploads(s3_endpoint, bucket) == []
    assert _report(s3_endpoint, bucket) == {
        "a.mzML": "converted",
        "b.mzML": "failed",
        "c.mzML": "converted",
    }
    again = _batch(bucket, state, "--resume")  # the store takes every upload again
    assert again.returncode == 0, again.stderr
    assert _report(s3_endpoint, bucket) == {
        "a.mzML": "skipped",  # recorded when its upload ended: not converted again
        "b.mzML": "converted",
        "c.mzML": "skipped",
    }
    assert "mzpeak/b.mzpeak" in keys(s3_endpoint, bucket)


@contextlib.contextmanager
def _small_disk(folder: Path, size: str):
    """A tmpfs of ``size`` mounted on ``folder`` for the block (skipped where mounting is
    forbidden: not root, or a container that refuses it)."""
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "none", str(folder)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if mounted.returncode != 0:
        pytest.skip(f"a small disk needs mount -t tmpfs, refused here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30)


def _fill(folder: Path) -> None:
    """Write into ``folder`` until its disk is full."""
    with open(folder / "filler", "ab") as f:
        block = bytes(1 << 20)
        try:
            while True:
                f.write(block)
                f.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    with contextlib.suppress(OSError), open(folder / "filler", "ab") as f:
        while True:  # the last pages too
            f.write(b"\0" * 4096)
            f.flush()


@contextlib.contextmanager
def _when_stored(key: str, act):
    """Run ``act()`` (once) as soon as moto's server (on a thread of this process) has
    answered a PUT of an object whose path holds ``key``."""
    done: list[bool] = []

    def seen(method: str, path: str, *_: object) -> None:
        if not done and method == "PUT" and key in path:
            done.append(True)
            act()

    with moto_requests(on_request=seen):
        yield done


def test_a_state_folder_on_a_full_disk_is_one_line_naming_it(s3_endpoint, bucket, tmp_path):
    _inputs(s3_endpoint, bucket, "a", "b")
    with _small_disk(tmp_path / "disk", "32m") as disk:
        state = disk / "state"
        assert _batch(bucket, state).returncode == 0
        before = json.loads((state / "remote_state.json").read_text())
        _inputs(s3_endpoint, bucket, "c")
        with _when_stored("/mzpeak/c.mzpeak", lambda: _fill(disk)) as filled:
            full = _batch(bucket, state, "--resume", "-q")
        assert filled, "the archive of c was never uploaded"
        one_line_error(full, str(state / "remote_state.json"), "No space left on device")
        assert "internal error" not in full.stderr
        assert sorted(p.name for p in state.iterdir()) == ["remote_state.json"]  # no .tmp
        assert json.loads((state / "remote_state.json").read_text()) == before
        (disk / "filler").unlink()
        again = _batch(bucket, state, "--resume")
        assert again.returncode == 0, again.stderr
        assert _report(s3_endpoint, bucket) == {
            "a.mzML": "skipped",  # the rows done before the disk filled
            "b.mzML": "skipped",
            "c.mzML": "converted",
        }
