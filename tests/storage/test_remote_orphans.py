"""A conversion or batch killed outright (SIGKILL: nothing of it runs any more) cleans up
nothing; the next conversion or batch to the same key or prefix does. It aborts the multipart
uploads the killed process left (and only those: an upload another tool started at the key,
and one of a process still alive, stay), and removes the staging folders the killed process
left in the temporary folder (one a live process holds stays)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mzpeak_dask.batch.remote import default_state_dir

from ..conftest import BUNDLED
from ..helpers.cli import run_cli
from ..helpers.replicate import replicate
from ..helpers.s3 import keys
from ..helpers.servers import s3_client

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def larger_run(tmp_path_factory):
    """small.mzML replicated twenty times: its archive (about 28 MB) sends 8 MiB parts well
    before its conversion ends."""
    path = tmp_path_factory.mktemp("larger") / "x20.mzML"
    replicate(BUNDLED / "small.mzML", path, 20)
    return path


@pytest.fixture
def temporary(tmp_path, monkeypatch):
    """The temporary folder of the commands run here (``TMPDIR``), and a home of their own
    (what a conversion keeps there stays apart from the user's)."""
    folder, home = tmp_path / "tmp", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setenv("HOME", str(home))
    return folder


def ours(endpoint: str, bucket: str, key: str, foreign: set[str] = frozenset()) -> list[str]:
    """The IDs of the multipart uploads open at ``key`` but those in ``foreign``."""
    listed = s3_client(endpoint).list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    return [u["UploadId"] for u in listed if u["Key"] == key and u["UploadId"] not in foreign]


def open_uploads(endpoint: str, bucket: str) -> list[str]:
    listed = s3_client(endpoint).list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    return sorted(u["UploadId"] for u in listed)


def foreign_upload(endpoint: str, bucket: str, key: str) -> str:
    """A multipart upload to ``key`` started by another tool (boto3 here), one part in."""
    client = s3_client(endpoint)
    upload = client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    client.upload_part(Bucket=bucket, Key=key, UploadId=upload, PartNumber=1, Body=b"theirs")
    return upload


def started(command: list[str], log) -> subprocess.Popen:
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)


def once_a_part_is_in(process, endpoint, bucket, key, foreign=frozenset(), within=180) -> str:
    """Wait until ``process`` has sent a part of its upload to ``key``; its upload ID."""
    client = s3_client(endpoint)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and process.poll() is None:
        for upload in ours(endpoint, bucket, key, foreign):
            if client.list_parts(Bucket=bucket, Key=key, UploadId=upload).get("Parts"):
                return upload
        time.sleep(0.01)
    process.kill()
    process.wait(timeout=60)
    raise AssertionError(f"no part of {key} came (exit status {process.returncode})")


def killed(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)


def converting(source, url: str, *extra: str) -> list[str]:
    """The arguments of ``mzpeak-dask convert`` in this process (where an archive is sent as it
    is written), in partitions small enough that parts of it go out well before its end."""
    small = ["--partition-items", "40", "--cluster", "inline"]
    return ["convert", str(source), url, "-q", *small, *extra]


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "mzpeak_dask", *args]


def test_the_next_conversion_aborts_a_killed_ones_upload_and_sweeps_its_staging(
    s3_endpoint, bucket, temporary, larger_run, tmp_path
):
    key, url = "out/x20.mzpeak", f"s3://{bucket}/out/x20.mzpeak"
    theirs = foreign_upload(s3_endpoint, bucket, key)
    with open(tmp_path / "first.log", "wb") as log:
        first = started(command(*converting(larger_run, url)), log)
        try:
            upload = once_a_part_is_in(first, s3_endpoint, bucket, key, {theirs})
        finally:
            killed(first)
    assert ours(s3_endpoint, bucket, key, {theirs}) == [upload]  # the killed one's, left
    left = list(temporary.iterdir())
    assert left  # its staging folder

    again = run_cli(*converting(larger_run, url))
    assert again.returncode == 0, again.stderr
    assert keys(s3_endpoint, bucket) == [key]
    assert open_uploads(s3_endpoint, bucket) == [theirs]  # the other tool's upload stays
    assert list(temporary.iterdir()) == []


def test_an_upload_and_staging_folder_of_a_live_conversion_are_kept(
    s3_endpoint, bucket, temporary, larger_run, tmp_path
):
    key, url = "out/x20.mzpeak", f"s3://{bucket}/out/x20.mzpeak"
    with open(tmp_path / "first.log", "wb") as log:
        first = started(command(*converting(larger_run, url)), log)
        try:
            upload = once_a_part_is_in(first, s3_endpoint, bucket, key)
            first.send_signal(signal.SIGSTOP)  # alive, converting no further for now
            left = list(temporary.iterdir())
            assert left  # its staging folder

            beside = run_cli(*converting(larger_run, url))
            assert beside.returncode == 0, beside.stderr
            assert open_uploads(s3_endpoint, bucket) == [upload]  # its owner lives
            assert list(temporary.iterdir()) == left
        finally:
            killed(first)

    after = run_cli(*converting(larger_run, url, "--overwrite"))
    assert after.returncode == 0, after.stderr
    assert keys(s3_endpoint, bucket) == [key]
    assert open_uploads(s3_endpoint, bucket) == []
    assert list(temporary.iterdir()) == []


UPLOAD = """
import sys
from mzpeak_dask.storage.uploads import upload_file
upload_file(sys.argv[1], sys.argv[2], part_bytes=5 << 20)
"""


def test_the_next_batch_aborts_the_upload_and_removes_the_staging_a_killed_one_left(
    s3_endpoint, bucket, temporary, tmp_path
):
    """A batch uploads each finished archive whole (a multipart upload for a large one): a
    process killed during such an upload leaves it; a batch killed while converting leaves its
    staging tree beside its state. The next batch into the prefix aborts the one and removes
    the other, and leaves another tool's upload under the prefix alone."""
    client = s3_client(s3_endpoint)
    client.upload_file(str(BUNDLED / "small.mzML"), bucket, "raw/small.mzML")
    raw, out = f"s3://{bucket}/raw", f"s3://{bucket}/mzpeak"
    big = tmp_path / "big.mzpeak"
    big.write_bytes(os.urandom(23 << 20))  # five parts of 5 MiB
    key = "mzpeak/big.mzpeak"
    theirs = foreign_upload(s3_endpoint, bucket, "mzpeak/other.mzpeak")
    script = [sys.executable, "-c", UPLOAD, str(big), f"s3://{bucket}/{key}"]
    with open(tmp_path / "upload.log", "wb") as log:
        uploading = started(script, log)
        try:
            upload = once_a_part_is_in(uploading, s3_endpoint, bucket, key)
        finally:
            killed(uploading)
    assert open_uploads(s3_endpoint, bucket) == sorted([upload, theirs])
    state = default_state_dir(out)  # under this test's home
    with open(tmp_path / "batch.log", "wb") as log:
        batch = started(command("batch", raw, out, "-q", "--cluster", "inline"), log)
        try:
            left = once_a_folder_is_in(batch, state)
        finally:
            killed(batch)
    assert left.is_dir()

    done = run_cli("batch", raw, out, "-q", "--cluster", "inline")
    assert done.returncode == 0, done.stderr
    assert "mzpeak/small.mzpeak" in keys(s3_endpoint, bucket)
    assert open_uploads(s3_endpoint, bucket) == [theirs]
    assert [p for p in state.iterdir() if p.is_dir()] == []


def once_a_folder_is_in(process: subprocess.Popen, folder: Path, within: float = 120) -> Path:
    """Wait until ``process`` has a staging folder in use in ``folder`` (named ``.tmp``, so
    locked: one still being created is named ``.new`` for a few microseconds, and a process
    killed in them leaves it for a sweep a minute later); that folder."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and process.poll() is None:
        made = [p for p in folder.glob("*.tmp") if p.is_dir()] if folder.is_dir() else []
        if made:
            return made[0]
        time.sleep(0.005)
    process.kill()
    process.wait(timeout=60)
    raise AssertionError(f"no folder came in {folder} (exit status {process.returncode})")


HOLD = """
import os, signal, sys
from mzpeak_dask import ConvertOptions
from mzpeak_dask.transfer.staged import StagedJobs
with StagedJobs([(sys.argv[1], sys.argv[2])], ConvertOptions()) as jobs:
    print(jobs.folder, flush=True)
    sys.stdin.readline()  # until told to die
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_the_next_conversion_sweeps_the_staging_folders_killed_ones_left(
    s3_endpoint, bucket, temporary, tmp_path
):
    """Processes staging a conversion of an S3 input in the temporary folder, as ``convert``
    does: the folder of one killed is removed by the next conversion, that of one alive is
    kept."""
    s3_client(s3_endpoint).upload_file(str(BUNDLED / "small.mzML"), bucket, "in/small.mzML")
    url = f"s3://{bucket}/in/small.mzML"
    script = [sys.executable, "-c", HOLD, url, str(tmp_path / "held.mzpeak")]
    holders = [
        subprocess.Popen(script, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    try:
        dead, alive = (holder.stdout.readline().strip() for holder in holders)
        assert sorted(map(str, temporary.iterdir())) == sorted([dead, alive])
        holders[0].communicate("die\n", timeout=60)
        assert holders[0].returncode == -signal.SIGKILL

        done = run_cli("convert", url, str(tmp_path / "small.mzpeak"), "-q")
        assert done.returncode == 0, done.stderr
        assert [str(p) for p in temporary.iterdir()] == [alive]
    finally:
        for holder in holders:
            if holder.poll() is None:
                holder.communicate("die\n", timeout=60)
