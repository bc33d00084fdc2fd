"""A batch over a bucket prefix: the tree mirrored under the output prefix, a bad file reported
(exit 1) while the others convert, reports under the output prefix, the state kept locally,
and ``--resume`` skipping unchanged inputs by ETag and size without downloading them."""

from __future__ import annotations

import io
import json
import os

import pyarrow.parquet as pq
import pytest

from ..conftest import BUNDLED, DATA
from ..helpers import run_cli
from ..servers import s3_client

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
