"""A manifest of many URLs in a bucket, most of them missing: checked by one listing per
prefix (counted at moto's server), not requests per URL, with progress; each missing URL is
its own failed row, staged without another request. A manifest of local paths, most missing,
leaves no empty folder in the output tree."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from mzpeak_dask.batch.remote import list_inputs

from ..conftest import BUNDLED, INLINE
from ..helpers.cli import run_cli
from ..helpers.servers import moto_requests, s3_client

pytestmark = [pytest.mark.cluster, pytest.mark.slow]  # moto's server on loopback
PER_PREFIX = 500


def _manifest(bucket: str, tmp_path, client):
    """Two prefixes of PER_PREFIX URLs each, one object under each that is there."""
    for prefix in ("p1", "p2"):
        client.upload_file(str(BUNDLED / "small.mzML"), bucket, f"raw/{prefix}/there.mzML")
    urls = [
        f"s3://{bucket}/raw/{prefix}/{name}.mzML"
        for prefix in ("p1", "p2")
        for name in ["there", *(f"gone{k:04d}" for k in range(PER_PREFIX - 1))]
    ]
    manifest = tmp_path / "urls.txt"
    manifest.write_text("\n".join(urls) + "\n")
    return manifest, urls


def test_a_manifest_is_checked_by_one_listing_per_prefix(s3_endpoint, bucket, tmp_path):
    client = s3_client(s3_endpoint)
    manifest, urls = _manifest(bucket, tmp_path, client)
    told: list[tuple[int, int]] = []
    with moto_requests(query=True) as seen:
        listing = list_inputs(str(manifest), lambda n, of: told.append((n, of)))
    assert [u for u, *_ in listing] == urls
    there = {u: (etag, size) for u, _, etag, size in listing if etag is not None}
    size = (BUNDLED / "small.mzML").stat().st_size
    assert sorted(there) == [urls[0], urls[PER_PREFIX]]
    assert {s for _, s in there.values()} == {size}
    assert sum(1 for *_, s in listing if s is None) == len(urls) - 2  # known missing
    assert [(m, p) for m, p, _, _ in seen] == [("GET", f"/{bucket}")] * 2, seen  # 2 listings
    assert told and told[-1] == (len(urls), len(urls))
    assert [n for n, _ in told] == sorted(n for n, _ in told)


def test_a_batch_of_a_manifest_mostly_missing_asks_no_more(s3_endpoint, bucket, tmp_path):
    client = s3_client(s3_endpoint)
    manifest, urls = _manifest(bucket, tmp_path, client)
    command = ["batch", str(manifest), f"s3://{bucket}/out", "--cluster", "inline"]
    with moto_requests(query=True) as seen:
        done = run_cli(*command, "--state-dir", str(tmp_path / "state"), env=os.environ.copy())
    assert done.returncode == 1, done.stderr
    gone = [(method, path) for method, path, _, _ in seen if "/gone" in path]
    assert gone == [], (len(gone), gone[:4])  # no request names a missing object
    failed = [line for line in done.stderr.splitlines() if line.startswith("failed:")]
    assert len(failed) == len(urls) - 2
    assert all(line.endswith(".mzML: no such object") for line in failed), failed[:3]
    assert f"checked {len(urls):,}/{len(urls):,} URLs" in done.stderr
    body = client.get_object(Bucket=bucket, Key="out/batch_report.json")["Body"].read()
    summary = json.loads(body)["summary"]
    assert (summary["converted"], summary["failed"]) == (2, len(urls) - 2)


def test_missing_paths_of_a_local_manifest_leave_no_folders(tmp_path):
    from mzpeak_dask.batch.runner import run_batch

    source = tmp_path / "data"
    (source / "a").mkdir(parents=True)
    shutil.copy(BUNDLED / "small.mzML", source / "a" / "small.mzML")
    lines = ["a/small.mzML", *(f"gone{k}/run.mzML" for k in range(5)), "b/c/run.mzML"]
    manifest = source / "manifest.txt"
    manifest.write_text("\n".join(lines) + "\n")
    output = tmp_path / "out"
    outcome = run_batch(manifest, output, cluster=INLINE)
    assert (outcome.count("converted"), outcome.count("failed")) == (1, 6)
    folders = sorted(p.relative_to(output).as_posix() for p in output.rglob("*") if p.is_dir())
    assert folders == ["a"]
