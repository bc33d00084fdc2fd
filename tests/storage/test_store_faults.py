"""What a conversion does when the object store fails: through a fault-injecting proxy in
front of moto's S3 server (tests/fault_proxy.py), transient faults (connections reset, 503
SlowDown, a 500 on an UploadPart, the server down for two seconds) are outlasted and the
archive in the bucket is the local conversion's, byte for byte; permanent ones end the run
with one line naming the URL and the cause, nothing at the key and no multipart upload left.
An output that cannot be written (no such bucket, credentials refused, an endpoint that does
not answer) is one line before any conversion work."""

from __future__ import annotations

import os
import subprocess

import pytest

from mzpeak_dask import ConvertOptions, convert
from mzpeak_dask.batch.report import NAMES as REPORTS
from mzpeak_dask.errors import StorageError
from mzpeak_dask.storage import filesystem, set_default_options, streaming

from ..conftest import BUNDLED, INLINE
from ..helpers.cli import one_line_error, run_cli
from ..helpers.fault_proxy import fault_proxy
from ..helpers.replicate import replicate
from ..helpers.s3 import keys, uploads
from ..helpers.servers import S3_ENVIRONMENT, _free_port, refusing_s3_server, s3_client

SMALL_PARTS = ConvertOptions(partition_items=40)
PROGRESS = ("converting ", "done ")  # the lines of a conversion under way (not a terminal)


@pytest.fixture(scope="module")
def larger_run(tmp_path_factory):
    """small.mzML replicated twenty times (an archive of about 28 MB: several parts are sent
    while it is written, with the command's 8 MiB parts too)."""
    path = tmp_path_factory.mktemp("larger") / "x20.mzML"
    replicate(BUNDLED / "small.mzML", path, 20)
    return path


@pytest.fixture
def proxy(s3_endpoint, request):
    """A fault-injecting proxy in front of the S3 server, the storage options pointing this
    process' filesystems at it (``spacing``: its faults spread, see FaultProxy)."""
    spacing = getattr(request, "param", 1)
    with fault_proxy(s3_endpoint, spacing=spacing) as proxy:
        set_default_options({"endpoint_url": proxy.url})
        try:
            yield proxy
        finally:
            set_default_options(None)


def through(proxy, **more: str) -> dict[str, str]:
    """The environment of a command whose S3 requests go through ``proxy``."""
    env = {k: v for k, v in os.environ.items() if k != "MZPEAK_DASK_STORAGE_OPTIONS"}
    return {**env, "AWS_ENDPOINT_URL": proxy.url, **more}


def no_progress(result: subprocess.CompletedProcess) -> None:
    """The command failed before converting anything (no progress line of a conversion)."""
    assert not any(line.startswith(PROGRESS) for line in result.stderr.splitlines()), result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("proxy", [2], indirect=True)  # a request forwarded between faults
def test_transient_faults_are_outlasted_and_the_archive_is_the_local_one(
    proxy, s3_endpoint, bucket, tmp_path, larger_run, monkeypatch
):
    monkeypatch.setattr(streaming, "PART_BYTES", 5 << 20)  # several parts from this run
    s3_client(s3_endpoint).upload_file(str(larger_run), bucket, "in/x20.mzML")
    source = f"s3://{bucket}/in/x20.mzML"
    local = tmp_path / "local.mzpeak"
    convert(source, local, SMALL_PARTS, cluster=INLINE)  # no fault yet
    proxy.reset_requests(2)
    proxy.slow_down(2)
    proxy.reset_responses(2)
    proxy.fail_parts(1)
    proxy.go_down(2.0, at_next_part=True)
    url = f"s3://{bucket}/out/x20.mzpeak"
    result = convert(source, url, SMALL_PARTS, cluster=INLINE)
    assert (result.input, result.output) == (source, url)
    assert proxy.injected == {
        "reset-request": 2,
        "slow-down": 2,
        "reset-response": 2,
        "part-error": 1,
        "down": 1,
    }, proxy.injected
    back = tmp_path / "back.mzpeak"
    s3_client(s3_endpoint).download_file(bucket, "out/x20.mzpeak", str(back))
    assert back.read_bytes() == local.read_bytes()
    assert uploads(s3_endpoint, bucket) == []


@pytest.mark.slow
def test_an_upload_part_failing_every_time_ends_in_one_line_leaving_nothing(
    proxy, s3_endpoint, bucket, larger_run
):
    proxy.fail_parts(None)
    url = f"s3://{bucket}/out/x20.mzpeak"
    result = run_cli("convert", str(larger_run), url, "--cluster", "inline", env=through(proxy))
    lines = [line for line in result.stderr.splitlines() if not line.startswith(PROGRESS)]
    one_line_error(
        subprocess.CompletedProcess([], result.returncode, "", "\n".join(lines)),
        url,
        "server error (500 InternalError)",
    )
    assert proxy.injected["part-error"] >= 1
    assert keys(s3_endpoint, bucket) == []
    assert uploads(s3_endpoint, bucket) == []  # the upload was aborted


@pytest.mark.slow
def test_a_server_gone_for_good_mid_upload_ends_in_one_line_naming_what_is_left(
    proxy, s3_endpoint, bucket, larger_run
):
    proxy.go_down(None, at_next_part=True)
    url = f"s3://{bucket}/out/x20.mzpeak"
    result = run_cli("convert", str(larger_run), url, "--cluster", "inline", env=through(proxy))
    lines = [line for line in result.stderr.splitlines() if not line.startswith(PROGRESS)]
    left = uploads(s3_endpoint, bucket)  # the abort could not reach the server either
    one_line_error(
        subprocess.CompletedProcess([], result.returncode, "", "\n".join(lines)),
        url,
        f"cannot connect to {proxy.url} (connection refused)",
        *(f"multipart upload {u['UploadId']} could not be aborted" for u in left),
    )
    assert len(left) == 1
    assert keys(s3_endpoint, bucket) == []
    s3_client(s3_endpoint).abort_multipart_upload(
        Bucket=bucket, Key=left[0]["Key"], UploadId=left[0]["UploadId"]
    )


@pytest.mark.slow  # commands in fresh processes against a server that is down
def test_an_unreachable_endpoint_is_one_line_naming_it(proxy, bucket, tmp_path):
    proxy.go_down(None)
    small = str(BUNDLED / "small.mzML")
    out = f"s3://{bucket}/out/small.mzpeak"
    result = run_cli("convert", small, out, "--cluster", "inline", env=through(proxy), timeout=60)
    one_line_error(result, out, f"cannot connect to {proxy.url} (connection refused)")
    no_progress(result)
    source = f"s3://{bucket}/in/small.mzML"
    here = tmp_path / "small.mzpeak"
    result = run_cli("convert", source, str(here), "--cluster", "inline", env=through(proxy))
    one_line_error(result, source, f"cannot connect to {proxy.url} (connection refused)")
    assert not here.exists()
    archive = f"s3://{bucket}/runs/small.mzpeak"
    result = run_cli("info", archive, env=through(proxy))
    one_line_error(result, f"{archive}: cannot connect to {proxy.url} (connection refused)")


def test_a_missing_output_bucket_is_one_line_before_any_work(s3_endpoint, tmp_path):
    small = str(BUNDLED / "small.mzML")
    out = "s3://no-such-bucket-here/out/small.mzpeak"
    result = run_cli("convert", small, out, "--cluster", "inline", env=os.environ.copy())
    one_line_error(result, f"{out}: bucket does not exist")
    no_progress(result)
    manifest = tmp_path / "runs.txt"  # a batch into storage lists URLs
    manifest.write_text("s3://no-such-bucket-here/in/small.mzML\n")
    prefix = "s3://no-such-bucket-here/out"
    result = run_cli(
        "batch", str(manifest), prefix, "--state-dir", str(tmp_path / "state"),
        env=os.environ.copy(),
    )  # fmt: skip
    one_line_error(result, f"{prefix}: bucket does not exist")
    no_progress(result)


@pytest.mark.slow  # six commands in fresh processes
def test_missing_inputs_are_one_line(s3_endpoint, bucket, tmp_path):
    here, env = tmp_path / "small.mzpeak", os.environ.copy()
    for source, cause in (
        (f"s3://{bucket}/in/nothing.mzML", "no such object"),
        ("s3://no-such-bucket-here/in/small.mzML", "bucket does not exist"),
        (f"s3://{bucket}/in/nothing.mzML.gz", "no such object"),  # staged, not read by ranges
    ):
        result = run_cli("convert", source, str(here), "--cluster", "inline", env=env)
        one_line_error(result, f"{source}: {cause}")
        assert not here.exists()
    for source, cause in (
        (f"s3://{bucket}/in/runs.txt", f"s3://{bucket}/in/runs.txt: no such object"),
        ("s3://no-such-bucket-here/in", "s3://no-such-bucket-here/in: cannot list (bucket does"),
    ):
        state = str(tmp_path / "state")
        result = run_cli("batch", source, f"s3://{bucket}/out", "--state-dir", state, env=env)
        one_line_error(result, cause)
    assert keys(s3_endpoint, bucket) == []
    # a manifest's missing object is a failed row of its batch, reported, in one line
    manifest = tmp_path / "runs.txt"
    manifest.write_text(f"s3://{bucket}/in/nothing.mzML\n")
    state = str(tmp_path / "state")
    result = run_cli("batch", str(manifest), f"s3://{bucket}/out", "--state-dir", state, env=env)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if not line.startswith("checked ")]
    assert lines == [f"failed: s3://{bucket}/in/nothing.mzML: no such object"]
    assert keys(s3_endpoint, bucket) == sorted(f"out/{name}" for name in REPORTS)


@pytest.mark.server
def test_refused_credentials_are_one_line_before_any_work(tmp_path):
    with refusing_s3_server() as endpoint:
        env = {**os.environ, **S3_ENVIRONMENT, "AWS_ENDPOINT_URL": endpoint}
        small = str(BUNDLED / "small.mzML")
        out = "s3://runs/out/small.mzpeak"
        result = run_cli("convert", small, out, "--cluster", "inline", env=env)
        one_line_error(result, f"{out}: access denied (check credentials)")
        no_progress(result)
        source, here = "s3://runs/in/small.mzML", tmp_path / "small.mzpeak"
        result = run_cli("convert", source, str(here), "--cluster", "inline", env=env)
        one_line_error(result, f"{source}: access denied (check credentials)")
        assert not here.exists()


def test_an_unreachable_endpoint_in_process_is_a_storage_error(proxy, bucket, tmp_path):
    proxy.go_down(None)
    with pytest.raises(StorageError, match="cannot connect to .* \\(connection refused\\)"):
        convert(BUNDLED / "small.mzML", f"s3://{bucket}/x.mzpeak", cluster=INLINE)


@pytest.mark.slow  # a conversion and a batch in fresh processes
def test_progress_lines_name_the_input_urls(s3_endpoint, bucket, tmp_path):
    s3_client(s3_endpoint).upload_file(str(BUNDLED / "small.mzML"), bucket, "in/small.mzML")
    source = f"s3://{bucket}/in/small.mzML"
    env = os.environ.copy()
    result = run_cli(
        "convert", source, str(tmp_path / "small.mzpeak"), "--cluster", "inline", env=env
    )
    assert result.returncode == 0, result.stderr
    progress = [line for line in result.stderr.splitlines() if line.startswith(PROGRESS)]
    assert progress and all(line.split(" ")[1] == f"{source}:" for line in progress), progress
    result = run_cli(
        "batch",
        f"s3://{bucket}/in",
        f"s3://{bucket}/out",
        "--state-dir",
        str(tmp_path / "state"),
        env=env,
    )
    assert result.returncode == 0, result.stderr
    progress = [line for line in result.stderr.splitlines() if line.startswith(PROGRESS)]
    assert progress and all(line.split(" ")[1] == f"{source}:" for line in progress), progress


def test_an_unreachable_web_server_is_one_line_naming_it(tmp_path):
    endpoint = f"http://127.0.0.1:{_free_port()}"  # nobody listens there
    with pytest.raises(StorageError) as raised:
        convert(f"{endpoint}/small.mzML", tmp_path / "small.mzpeak", cluster=INLINE)
    assert str(raised.value) == (
        f"{endpoint}/small.mzML: cannot connect to {endpoint} (connection refused)"
    )
    assert not (tmp_path / "small.mzpeak").exists()


@pytest.mark.parametrize(
    ("store", "missing"), [("gcs_host", "bucket"), ("azurite_endpoint", "container")]
)
def test_a_missing_bucket_elsewhere_is_one_line_before_any_work(store, missing, request):
    request.getfixturevalue(store)
    scheme = "gs" if store == "gcs_host" else "az"
    url = f"{scheme}://no-such-{missing}-here/out/small.mzpeak"
    seen = []
    with pytest.raises(StorageError) as raised:
        convert(BUNDLED / "small.mzML", url, cluster=INLINE, progress=lambda *a: seen.append(a))
    assert str(raised.value) == f"{url}: {missing} does not exist"
    assert seen == []  # nothing converted


def test_s3_timeouts_and_retries_are_defaults_the_storage_options_override(s3_endpoint):
    for _ in range(2):  # the defaults are not changed by a use of them
        config = filesystem("s3://runs/x.mzpeak", {})[0].connect().meta.config
        assert (config.connect_timeout, config.read_timeout) == (5, 30)
        assert config.retries == {"mode": "standard", "total_max_attempts": 3}
    mine = {"read_timeout": 300, "retries": {"max_attempts": 9, "mode": "adaptive"}}
    config = filesystem("s3://runs/x.mzpeak", {"config_kwargs": mine})[0].connect().meta.config
    assert (config.connect_timeout, config.read_timeout) == (5, 300)
    assert config.retries == {"mode": "adaptive", "total_max_attempts": 10}
    assert mine["retries"] == {"max_attempts": 9, "mode": "adaptive"}  # the caller's, as given


def test_an_upload_the_store_fails_for_a_while_is_made_again(proxy, s3_endpoint, bucket, tmp_path):
    local = tmp_path / "local.mzpeak"
    convert(BUNDLED / "small.mzML", local, cluster=INLINE)
    proxy.fail_puts(6)  # more than the calls botocore makes of one request (3; 5 by default)
    url = f"s3://{bucket}/out/small.mzpeak"
    convert(BUNDLED / "small.mzML", url, cluster=INLINE)  # one PUT: a small archive
    assert proxy.injected == {"put-error": 6}
    back = tmp_path / "back.mzpeak"
    s3_client(s3_endpoint).download_file(bucket, "out/small.mzpeak", str(back))
    assert back.read_bytes() == local.read_bytes()
