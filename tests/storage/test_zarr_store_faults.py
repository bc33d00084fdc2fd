"""What ``export-zarr`` into a bucket does when the store fails: no such bucket, credentials
refused, an endpoint that refuses connections, a worker's chunk write failing part way
through the run, the commit's copy to the run's keys failing. Each ends the command with one
line naming the store and the run, a non-zero exit, and no run in the store (the store's own
group, and nothing else, as after a failed local export); an older run that ``--overwrite``
was replacing is left as it was, and a replacement that succeeds leaves nothing of it. Real
servers on loopback: moto's, behind the fault-injecting proxy (tests/helpers/fault_proxy.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest

from mzpeak_dask.zarr_runs.store import enable_rectilinear, open_group

from ..helpers.cli import one_line_error, run_cli
from ..helpers.fault_proxy import fault_proxy
from ..helpers.s3 import keys
from ..helpers.servers import S3_ENVIRONMENT, refusing_s3_server

pytestmark = pytest.mark.slow

EVERY = 1 << 30  # fail every matching request from then on


@pytest.fixture(scope="module")
def archive(reference_archives):
    return reference_archives / "small.mzpeak"


@pytest.fixture
def proxy(s3_endpoint):
    with fault_proxy(s3_endpoint) as proxy:
        yield proxy


def through(proxy) -> dict[str, str]:
    """The environment of a command whose S3 requests go through ``proxy``."""
    env = {k: v for k, v in os.environ.items() if k != "MZPEAK_DASK_STORAGE_OPTIONS"}
    return {**env, "AWS_ENDPOINT_URL": proxy.url}


def export(archive, store: str, env: dict[str, str], *more: str):
    return run_cli(
        "export-zarr", str(archive), store, "--zarr-chunk-points", "2000", *more, env=env
    )


def test_a_missing_bucket_is_one_line_naming_the_store_and_run(s3_endpoint, archive):
    store = "s3://no-such-bucket-here/runs.zarr"
    result = export(archive, store, os.environ.copy(), "--cluster", "inline")
    one_line_error(result, f"{store}: run small: bucket does not exist")


@pytest.mark.server
def test_refused_credentials_are_one_line_naming_the_store_and_run(archive):
    with refusing_s3_server() as endpoint:
        env = {**os.environ, **S3_ENVIRONMENT, "AWS_ENDPOINT_URL": endpoint}
        env.pop("MZPEAK_DASK_STORAGE_OPTIONS", None)
        store = "s3://runs/runs.zarr"
        result = export(archive, store, env, "--cluster", "inline")
    one_line_error(result, f"{store}: run small: access denied (check credentials)")


def test_a_refused_connection_is_one_line_naming_the_store_and_run(
    proxy, s3_endpoint, bucket, archive
):
    proxy.go_down(None)
    store = f"s3://{bucket}/runs.zarr"
    result = export(archive, store, through(proxy), "--cluster", "inline")
    one_line_error(
        result, f"{store}: run small: cannot connect to {proxy.url} (connection refused)"
    )
    assert keys(s3_endpoint, bucket) == []


@pytest.mark.parametrize(
    "cluster", [["--cluster", "inline"], ["--workers", "1"]], ids=["inline", "worker"]
)
def test_a_chunk_write_failing_mid_export_leaves_no_run(
    proxy, s3_endpoint, bucket, archive, cluster
):
    """The worker's writes of the run's chunks (under its hidden work prefix) succeed three
    times, then fail for good: the worker's error comes back as one line, and the chunks
    written are removed."""
    proxy.fail_puts(EVERY, containing="/runs.zarr/.small.tmp-", after=3)
    store = f"s3://{bucket}/runs.zarr"
    result = export(archive, store, through(proxy), *cluster)
    one_line_error(result, f"{store}: run small: server error (500 InternalError)")
    assert proxy.injected["put-error"] >= 1
    assert keys(s3_endpoint, bucket) == ["runs.zarr/zarr.json"]  # the store's group alone


def test_a_commit_failing_half_way_leaves_no_run(proxy, s3_endpoint, bucket, archive):
    """The copies of the chunks to the run's keys succeed twice, then fail for good: what
    was copied is removed with the work prefix."""
    proxy.fail_puts(EVERY, containing="/runs.zarr/small/", after=2)
    store = f"s3://{bucket}/runs.zarr"
    result = export(archive, store, through(proxy), "--cluster", "inline")
    one_line_error(result, f"{store}: run small: server error (500 InternalError)")
    assert proxy.injected["put-error"] >= 1
    assert keys(s3_endpoint, bucket) == ["runs.zarr/zarr.json"]


def test_writes_under_way_when_one_fails_land_before_the_clean_up(
    proxy, s3_endpoint, bucket, archive
):
    """Two workers of two threads each write the run's chunks, each write held back a while
    by the store, when the write of one chunk fails for good (after the chunks before it
    were written): the chunks being written on the other threads then land before the
    hidden prefix is removed, never after it. Done three times, as the writes' timing
    varies; each time the command fails with one line and the bucket holds no run and no
    hidden prefix."""
    store = f"s3://{bucket}/runs.zarr"
    proxy.delay_puts(0.3, containing="/runs.zarr/.small.tmp-")
    for attempt in range(3):
        proxy.fail_puts(EVERY, containing="/mz.20")  # the 21st of 35 chunks' mz object
        result = export(
            archive, store, through(proxy), "--workers", "2", "--threads-per-worker", "2"
        )
        one_line_error(result, f"{store}: run small: server error (500 InternalError)")
        assert keys(s3_endpoint, bucket) == ["runs.zarr/zarr.json"], attempt


def contents(group_url: str) -> tuple[dict, dict[str, np.ndarray]]:
    """A run's attributes and every array's values, read with zarr."""
    enable_rectilinear()
    group = open_group(group_url, mode="r")
    return dict(group.attrs), {key: group[key][:] for key in sorted(group.array_keys())}


def assert_same_run(found, expected) -> None:
    assert found[0] == expected[0]
    assert sorted(found[1]) == sorted(expected[1])
    for key, values in expected[1].items():
        np.testing.assert_array_equal(found[1][key], values)


def exported_old_run(archive, store: str, env: dict[str, str]):
    """The run as first exported to ``store`` (35 Zarr chunks a signal array), read back."""
    done = export(archive, store, env, "--cluster", "inline")
    assert done.returncode == 0, done.stderr
    return contents(f"{store}/small")


def test_an_overwrite_whose_commit_fails_keeps_the_old_run(proxy, s3_endpoint, bucket, archive):
    """The new run (12 Zarr chunks: other chunks under the same keys) is copied to the run's
    keys five times, then the copies fail for good: the command fails with one line, and the
    old run is there as it was, object for object."""
    store = f"s3://{bucket}/runs.zarr"
    old = exported_old_run(archive, store, through(proxy))
    before = keys(s3_endpoint, bucket)
    proxy.fail_puts(EVERY, containing="/runs.zarr/small/", after=5, copying="/.small.tmp-")
    result = run_cli(
        "export-zarr", str(archive), store, "--zarr-chunk-points", "20000", "--overwrite",
        "--cluster", "inline", env=through(proxy),
    )  # fmt: skip
    one_line_error(result, f"{store}: run small: server error (500 InternalError)")
    assert proxy.injected["put-error"] >= 1
    assert keys(s3_endpoint, bucket) == before
    assert_same_run(contents(f"{store}/small"), old)


def test_an_overwrite_that_cannot_put_the_old_run_back_names_where_it_is(
    proxy, s3_endpoint, bucket, archive
):
    """Every write to the run's keys fails after the first five, putting the old run back
    too: the line names the hidden prefix holding the old run, whole, and no run is seen."""
    store = f"s3://{bucket}/runs.zarr"
    exported_old_run(archive, store, through(proxy))
    run = "runs.zarr/small/"
    before = [k.removeprefix(run) for k in keys(s3_endpoint, bucket) if k.startswith(run)]
    proxy.fail_puts(EVERY, containing="/runs.zarr/small/", after=5)
    result = run_cli(
        "export-zarr", str(archive), store, "--zarr-chunk-points", "20000", "--overwrite",
        "--cluster", "inline", env=through(proxy),
    )  # fmt: skip
    one_line_error(result, f"{store}: run small: server error (500 InternalError)")
    [saved] = {k.split("/")[1] for k in keys(s3_endpoint, bucket) if "/.small.old-" in k}
    one_line_error(result, f"{store}/{saved} (the old run, to copy back to {store}/small)")
    kept = [k for k in keys(s3_endpoint, bucket) if k.startswith(f"runs.zarr/{saved}/")]
    assert [k.removeprefix(f"runs.zarr/{saved}/") for k in kept] == before
    assert "runs.zarr/small/zarr.json" not in keys(s3_endpoint, bucket)


def test_an_overwrite_leaves_only_the_new_run(proxy, s3_endpoint, bucket, archive):
    """Replacing a run of 35 Zarr chunks by one of 12: the run's keys are those of the new
    run exported afresh, its arrays equal, and nothing of the old run or the commit stays."""
    store = f"s3://{bucket}/runs.zarr"
    old = exported_old_run(archive, store, through(proxy))
    new = ["--zarr-chunk-points", "20000", "--cluster", "inline"]
    fresh = f"s3://{bucket}/fresh.zarr"
    assert run_cli("export-zarr", str(archive), fresh, *new, env=through(proxy)).returncode == 0
    done = run_cli("export-zarr", str(archive), store, *new, "--overwrite", env=through(proxy))
    assert done.returncode == 0, done.stderr
    everything = keys(s3_endpoint, bucket)
    run = [k.removeprefix("runs.zarr/") for k in everything if k.startswith("runs.zarr/")]
    expected = [k.removeprefix("fresh.zarr/") for k in everything if k.startswith("fresh.zarr/")]
    assert run == expected
    assert not any(k.startswith("runs.zarr/.") for k in everything)
    replaced = contents(f"{store}/small")
    assert_same_run(replaced, contents(f"{fresh}/small"))
    assert len(replaced[1]["zarr_chunk_mz_min"]) < len(old[1]["zarr_chunk_mz_min"])


def _started(archive, store: str, env: dict[str, str], *more: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "mzpeak_dask", "export-zarr", str(archive), store]
    command += ["--zarr-chunk-points", "20000", "--cluster", "inline", *more]
    return subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def _held_back(proxy, path: str, process: subprocess.Popen) -> None:
    """Wait (a deadline) until ``process`` has sent the PUT of ``path`` the proxy holds."""
    deadline = time.monotonic() + 240
    while not any(m == "PUT" and t.endswith(path) for m, t in list(proxy.requests)):
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "the PUT never came"
        time.sleep(0.05)


def _hidden(endpoint: str, bucket: str) -> list[str]:
    return sorted({k.split("/")[1] for k in keys(endpoint, bucket) if k.startswith("runs.zarr/.")})


def test_an_export_killed_while_replacing_a_run_is_put_back_by_the_next(
    s3_endpoint, bucket, archive, reference_archives
):
    """``--overwrite`` killed (SIGKILL) with the new run copied in but its group's zarr.json
    not yet written: the run is invisible, the old one only in ``.small.old-*``. The next
    export into the store (of another run) puts the old run back, deletes the hidden
    prefixes, and says so."""
    store = f"s3://{bucket}/runs.zarr"
    old = exported_old_run(archive, store, os.environ.copy())
    with fault_proxy(s3_endpoint) as proxy:
        proxy.delay_puts(600, containing="/runs.zarr/small/zarr.json")  # the run's last
        killed = _started(archive, store, through(proxy), "--overwrite")
        try:
            _held_back(proxy, f"/{bucket}/runs.zarr/small/zarr.json", killed)
        finally:
            killed.kill()
            killed.communicate(timeout=60)
    assert "runs.zarr/small/zarr.json" not in keys(s3_endpoint, bucket)  # no run is seen
    left = _hidden(s3_endpoint, bucket)
    assert [n.split("-")[0] for n in left] == [".small.old", ".small.tmp"], left
    other = reference_archives / "ours.mzpeak"
    done = export(other, store, os.environ.copy(), "--cluster", "inline")
    assert done.returncode == 0, done.stderr
    assert "run small put back as it was" in done.stderr, done.stderr
    assert "removed the hidden prefixes of run small" in done.stderr, done.stderr
    assert _hidden(s3_endpoint, bucket) == []
    assert_same_run(contents(f"{store}/small"), old)
    assert contents(f"{store}/ours")[1]


def test_an_export_under_way_is_not_swept_by_another(
    s3_endpoint, bucket, archive, reference_archives, caplog
):
    """An export held back at its last write (25 s: within the client's read timeout) while
    another export into the same store runs from start to end: the second leaves the first's
    hidden prefix alone (its lease is held), and the first then finishes whole."""
    from mzpeak_dask import ClusterOptions
    from mzpeak_dask.export.zarr import to_zarr

    store = f"s3://{bucket}/runs.zarr"
    with fault_proxy(s3_endpoint) as proxy:
        proxy.delay_puts(25, containing="/runs.zarr/small/zarr.json")
        first = _started(archive, store, through(proxy))
        try:
            _held_back(proxy, f"/{bucket}/runs.zarr/small/zarr.json", first)
            [work] = _hidden(s3_endpoint, bucket)
            to_zarr(reference_archives / "ours.mzpeak", store, cluster=ClusterOptions("inline"))
            assert "removed" not in caplog.text, caplog.text
            assert _hidden(s3_endpoint, bucket) == [work]
            assert first.poll() is None  # still under way all along
        finally:
            _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert _hidden(s3_endpoint, bucket) == []
    assert contents(f"{store}/small")[1] and contents(f"{store}/ours")[1]
