"""Inputs of a batch over a bucket prefix that must fail alone, as failed rows of the batch's
reports (exit 1), while the others convert: an object whose key would leave the staging tree
(``..``, ``.``, empty or over-long segments: a key never chooses a local path), and an object
that is not MS data (plain text, empty, truncated or garbage gzip)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from mzpeak_dask.storage.keys import shown

from ..conftest import BUNDLED, DATA
from ..helpers.cli import run_cli
from ..helpers.servers import s3_client

pytestmark = pytest.mark.slow

DEADLINE = 600  # s: a batch that has not ended by then hangs


def _batch(source: str, output: str, tmp_path: Path) -> tuple:
    """``batch SOURCE OUTPUT`` with its home, temporary folder and state all under
    ``tmp_path``; the completed process."""
    env = dict(os.environ, HOME=str(tmp_path / "home"), TMPDIR=str(tmp_path / "tmp"))
    for name in ("home", "tmp"):
        (tmp_path / name).mkdir(parents=True, exist_ok=True)
    state = tmp_path / "state"
    command = ["batch", source, output, "--cluster", "inline", "--state-dir", str(state)]
    return run_cli(*command, env=env, timeout=DEADLINE)


def _report(client, bucket: str, key: str) -> dict:
    return json.loads(client.get_object(Bucket=bucket, Key=key)["Body"].read())


def _keys(client, bucket: str, prefix: str) -> list[str]:
    listed = client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
    return sorted(k["Key"] for k in listed)


def test_keys_that_would_leave_the_staging_tree_fail_alone(s3_endpoint, bucket, tmp_path):
    client = s3_client(s3_endpoint)
    client.upload_file(str(BUNDLED / "small.mzML"), bucket, "trav/good.mzML")
    gz = str(DATA / "mzdata" / "small.mzML.gz")
    # staged under STATE/batch-*/in/, three levels below tmp_path: each lands in tmp_path
    bad = {
        "trav/../../../anywhere/PWNED.mzML.gz": gz,
        "trav/sub/../../../escape.mzML": str(BUNDLED / "small.mzML"),
        "trav/" + "../" * 40 + str(tmp_path).lstrip("/") + "/abs/PWNED.mzML.gz": gz,
        "trav/./dot/PWNED.mzML": str(BUNDLED / "small.mzML"),
        "trav/a//PWNED.mzML": str(BUNDLED / "small.mzML"),
        "trav/" + "x" * 300 + ".mzML": str(BUNDLED / "small.mzML"),
        "trav/esc\x1b[2Jhome.mzML": str(BUNDLED / "small.mzML"),  # a terminal's escape
        "trav/tab\tx.mzML": str(BUNDLED / "small.mzML"),
    }
    for key, path in bad.items():
        client.upload_file(path, bucket, key)
    assert set(bad) <= set(_keys(client, bucket, "trav/"))  # the store keeps them as given

    done = _batch(f"s3://{bucket}/trav", f"s3://{bucket}/out/b", tmp_path)

    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "error:" not in done.stderr
    escaped = [p for p in tmp_path.rglob("*") if "PWNED" in p.name or p.name.startswith("escape")]
    assert escaped == []
    assert not (tmp_path / "anywhere").exists() and not (tmp_path / "abs").exists()
    assert _keys(client, bucket, "out/") == [
        "out/b/batch_report.html",
        "out/b/batch_report.json",
        "out/b/catalog.parquet",
        "out/b/good.mzpeak",
    ]
    doc = _report(client, bucket, "out/b/batch_report.json")
    status = {f["input"]: f["status"] for f in doc["files"]}
    assert status == {
        f"s3://{bucket}/trav/good.mzML": "converted",
        **{f"s3://{bucket}/{key}": "failed" for key in bad},
    }
    for row in doc["files"]:
        if row["status"] == "failed":
            assert row["error"].startswith(shown(row["input"]))
            assert not any(c in row["error"] for c in "\n\t\x1b")
            assert row["output"].startswith(f"s3://{bucket}/out/b")
            assert ".." not in row["output"].removeprefix(f"s3://{bucket}/")
    failed = [line for line in done.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == len(bad) and "\x1b" not in done.stderr and "\t" not in done.stderr


def test_objects_that_are_not_ms_data_fail_alone(s3_endpoint, bucket, tmp_path):
    client = s3_client(s3_endpoint)
    client.upload_file(str(BUNDLED / "small.mzML"), bucket, "raw/a/small.mzML")
    zipped = (DATA / "mzdata" / "small.mzML.gz").read_bytes()
    client.put_object(Bucket=bucket, Key="raw/b/zipped.mzML.gz", Body=zipped)
    bad = {
        "raw/junk.mzML": b"plain text, not a run\n",
        "raw/empty.mzML": b"",
        "raw/b/truncated.mzML.gz": zipped[: len(zipped) // 3],
        "raw/b/garbage.mzML.gz": gzip.compress(b"\x00\x01 not XML " * 100)[:-8] + b"junkjunk",
    }
    for key, body in bad.items():
        client.put_object(Bucket=bucket, Key=key, Body=body)

    done = _batch(f"s3://{bucket}/raw/", f"s3://{bucket}/batch/", tmp_path)

    assert done.returncode == 1, done.stderr
    assert "error:" not in done.stderr and "Traceback" not in done.stderr
    assert _keys(client, bucket, "batch/") == [
        "batch/a/small.mzpeak",
        "batch/b/zipped.mzpeak",
        "batch/batch_report.html",
        "batch/batch_report.json",
        "batch/catalog.parquet",
    ]
    doc = _report(client, bucket, "batch/batch_report.json")
    assert doc["summary"]["converted"] == 2 and doc["summary"]["failed"] == len(bad)
    rows = {f["input"]: f for f in doc["files"]}
    for key in bad:
        row = rows[f"s3://{bucket}/{key}"]
        assert row["status"] == "failed" and row["error"].startswith(row["input"]), row
    failed = [line for line in done.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == len(bad) and all(f"s3://{bucket}/raw/" in f for f in failed)
    assert "/tmp/" not in "".join(failed) and "batch-" not in "".join(failed)


def test_bad_lines_of_a_manifest_fail_alone(s3_endpoint, bucket, tmp_path):
    client = s3_client(s3_endpoint)
    client.upload_file(str(BUNDLED / "small.mzML"), bucket, "raw/good.mzML")
    client.upload_file(str(BUNDLED / "small.mzML"), bucket, "raw/../../../PWNED.mzML")
    bad = [
        f"s3://{bucket}/raw/missing.mzML",
        f"s3://{bucket}/raw/../../../PWNED.mzML",
        str(BUNDLED / "small.mzML"),  # a path, not a URL
    ]
    manifest = tmp_path / "manifest.txt"
    manifest.write_text("\n".join([f"s3://{bucket}/raw/good.mzML", *bad]) + "\n")

    done = _batch(str(manifest), f"s3://{bucket}/out", tmp_path)

    assert done.returncode == 1, done.stderr
    assert "error:" not in done.stderr and "Traceback" not in done.stderr
    assert [p for p in tmp_path.rglob("*") if "PWNED" in p.name] == []
    doc = _report(client, bucket, "out/batch_report.json")
    status = {f["input"]: f["status"] for f in doc["files"]}
    assert status == {f"s3://{bucket}/raw/good.mzML": "converted", **dict.fromkeys(bad, "failed")}
    assert f"out/{bucket}/raw/good.mzpeak" in _keys(client, bucket, "out/")


def test_hidden_folders_are_left_out_of_a_prefix_and_fail_in_a_manifest(
    s3_endpoint, bucket, tmp_path
):
    """As in a local batch, a folder whose name starts with '.' is not entered; a manifest that
    names an object in one gets a failed row for it, not silence."""
    client = s3_client(s3_endpoint)
    client.upload_file(str(BUNDLED / "small.mzML"), bucket, "raw/good.mzML")
    client.upload_file(str(BUNDLED / "small.mzML"), bucket, "raw/.snapshots/old.mzML")

    done = _batch(f"s3://{bucket}/raw", f"s3://{bucket}/out", tmp_path)

    assert done.returncode == 0, done.stderr
    doc = _report(client, bucket, "out/batch_report.json")
    assert [f["input"] for f in doc["files"]] == [f"s3://{bucket}/raw/good.mzML"]

    manifest = tmp_path / "manifest.txt"
    hidden = f"s3://{bucket}/raw/.snapshots/old.mzML"
    manifest.write_text(f"s3://{bucket}/raw/good.mzML\n{hidden}\n")
    listed = _batch(str(manifest), f"s3://{bucket}/listed", tmp_path / "second")

    assert listed.returncode == 1, listed.stderr
    doc = _report(client, bucket, "listed/batch_report.json")
    status = {f["input"]: f["status"] for f in doc["files"]}
    assert status == {f"s3://{bucket}/raw/good.mzML": "converted", hidden: "failed"}
