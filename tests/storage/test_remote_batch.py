"""A batch over a bucket prefix: the tree mirrored under the output prefix, a bad file reported
(exit 1) while the others convert, reports under the output prefix, the state kept locally,
and ``--resume`` skipping unchanged inputs by ETag and size without downloading them."""

from __future__ import annotations

import io
import json
import os

import pyarrow.parquet as pq
import pytest

from mzpeak_dask import convert

from ..conftest import BUNDLED, DATA, INLINE
from ..helpers.archives import assert_same_members
from ..helpers.cli import run_cli
from ..helpers.servers import moto_requests, s3_client

pytestmark = pytest.mark.slow


def test_batch_from_a_prefix_with_a_bad_file_then_resume(s3_endpoint, bucket, tmp_path):
    client = s3_client(s3_endpoint)
    client.upload_file(str(BUNDLED / "small.mzML"), bucket, "raw/a/small.mzML")
    client.upload_file(str(DATA / "openms" / "IM_FAIMS_test.mzML"), bucket, "raw/b/faims.mzML")
    bad = DATA / "openms" / "FileFilter_39_input_corrupt.mzML"
    client.upload_file(str(bad), bucket, "raw/b/broken.mzML")
    client.put_object(Bucket=bucket, Key="raw/notes.txt", Body=b"not a run")
    state = tmp_path / "state"
    command = [
        "batch",
        f"s3://{bucket}/raw",
        f"s3://{bucket}/mzpeak",
        "--cluster",
        "inline",
        "--state-dir",
        str(state),
    ]
    first = run_cli(*command, env=os.environ.copy())
    assert first.returncode == 1, first.stderr
    failed = [line for line in first.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == 1 and f"s3://{bucket}/raw/b/broken.mzML" in failed[0]
    assert "batch-" not in failed[0]  # the URL, not the staged copy
    listed = client.list_objects_v2(Bucket=bucket, Prefix="mzpeak/")
    assert sorted(k["Key"] for k in listed["Contents"]) == [
        "mzpeak/a/small.mzpeak",
        "mzpeak/b/faims.mzpeak",
        "mzpeak/batch_report.html",
        "mzpeak/batch_report.json",
        "mzpeak/catalog.parquet",
    ]
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    doc = json.loads(
        client.get_object(Bucket=bucket, Key="mzpeak/batch_report.json")["Body"].read()
    )
    assert doc["summary"]["converted"] == 2 and doc["summary"]["failed"] == 1
    assert {f["output"] for f in doc["files"] if f["status"] == "converted"} == {
        f"s3://{bucket}/mzpeak/a/small.mzpeak",
        f"s3://{bucket}/mzpeak/b/faims.mzpeak",
    }
    body = client.get_object(Bucket=bucket, Key="mzpeak/catalog.parquet")["Body"].read()
    catalog = pq.read_table(io.BytesIO(body)).to_pylist()
    assert sorted(row["archive"] for row in catalog) == [
        f"s3://{bucket}/mzpeak/a/small.mzpeak",
        f"s3://{bucket}/mzpeak/b/faims.mzpeak",
    ]
    assert (state / "remote_state.json").is_file()  # the state stays local

    client.upload_file(
        str(DATA / "openms" / "MS3_nonHierarchical.mzML"), bucket, "raw/a/small.mzML"
    )
    again = run_cli(*command, "--resume", env=os.environ.copy())
    assert again.returncode == 1, again.stderr
    doc = json.loads(
        client.get_object(Bucket=bucket, Key="mzpeak/batch_report.json")["Body"].read()
    )
    status = {f["input"]: f["status"] for f in doc["files"]}
    assert status == {
        f"s3://{bucket}/raw/a/small.mzML": "converted",  # changed: a new ETag
        f"s3://{bucket}/raw/b/broken.mzML": "failed",
        f"s3://{bucket}/raw/b/faims.mzML": "skipped",  # same ETag and size
    }


def test_a_batch_reads_uncompressed_inputs_by_ranges_where_they_lie(s3_endpoint, bucket, tmp_path):
    """Uncompressed inputs of a batch from a prefix are read by ranged GETs, never whole (a
    compressed one is still streamed into the staging tree), and converted as locally."""
    client = s3_client(s3_endpoint)
    inputs = {
        "raw/a/small.mzML": BUNDLED / "small.mzML",
        "raw/b/small.mgf": DATA / "mzdata" / "small.mgf",
        "raw/b/zipped.mzML.gz": DATA / "mzdata" / "small.mzML.gz",
    }
    for key, path in inputs.items():
        client.upload_file(str(path), bucket, key)
    command = ["batch", f"s3://{bucket}/raw", f"s3://{bucket}/mzpeak", "--cluster", "inline"]
    with moto_requests() as seen:
        done = run_cli(*command, "--state-dir", str(tmp_path / "state"), env=os.environ.copy())
    assert done.returncode == 0, done.stderr
    gets = {}
    for method, path, status in seen:
        if method == "GET" and "/raw/" in path:
            gets.setdefault(path.split("/raw/", 1)[1], []).append(status)
    for name in ("a/small.mzML", "b/small.mgf"):
        assert gets[name] and set(gets[name]) == {206}, (name, gets[name])  # ranges only
    assert 200 in gets["b/zipped.mzML.gz"]  # a gzip stream cannot be read from the middle
    for key, path in inputs.items():
        name = key.removeprefix("raw/").split(".")[0] + ".mzpeak"
        local = tmp_path / f"local-{name.replace('/', '-')}"
        convert(path, local, cluster=INLINE)
        back = tmp_path / f"back-{name.replace('/', '-')}"
        client.download_file(bucket, f"mzpeak/{name}", str(back))
        assert_same_members(local, back)


class _StopAfterFirst:
    """A progress display interrupted (as by Ctrl-C) once one input has finished."""

    def __init__(self):
        self.finished: set[str] = set()

    def __call__(self, source: str, done: int, total: int) -> None:
        if done == total:
            self.finished.add(source)
        if len(self.finished) > 1:
            raise KeyboardInterrupt


def test_a_stopped_batch_keeps_what_it_finished_for_the_resume(s3_endpoint, bucket, tmp_path):
    from mzpeak_dask.batch.remote import run_remote_batch
    from mzpeak_dask.options import BatchOptions

    client = s3_client(s3_endpoint)
    for k in range(3):
        client.upload_file(str(BUNDLED / "small.mzML"), bucket, f"raw/run{k}.mzML")
    source, output, state = f"s3://{bucket}/raw", f"s3://{bucket}/mzpeak", tmp_path / "state"
    with pytest.raises(KeyboardInterrupt):
        run_remote_batch(
            source, output, cluster=INLINE, progress=_StopAfterFirst(), state_dir=state
        )
    listed = client.list_objects_v2(Bucket=bucket, Prefix="mzpeak/").get("Contents", [])
    kept = [k["Key"] for k in listed if k["Key"].endswith(".mzpeak")]
    assert len(kept) == 1, listed  # the one finished archive
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    doc = json.loads(
        client.get_object(Bucket=bucket, Key="mzpeak/batch_report.json")["Body"].read()
    )
    assert doc["interrupted"] is True
    reported = sorted((f["input"].rsplit("/", 1)[1], f["status"]) for f in doc["files"])
    stopped_name = kept[0].rsplit("/", 1)[1].replace(".mzpeak", ".mzML")
    assert reported == sorted(
        (f"run{k}.mzML", "converted" if f"run{k}.mzML" == stopped_name else "pending")
        for k in range(3)
    )
    resumed = run_remote_batch(
        source, output, cluster=INLINE, batch=BatchOptions(resume=True), state_dir=state
    )
    status = {r["input"].rsplit("/", 1)[1]: r["status"] for r in resumed.records}
    finished = kept[0].rsplit("/", 1)[1].replace(".mzpeak", ".mzML")
    assert status == {
        f"run{k}.mzML": "skipped" if f"run{k}.mzML" == finished else "converted" for k in range(3)
    }
