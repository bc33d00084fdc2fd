"""One batch at a time into an output prefix: a second batch into the prefix of a running one
is refused (exit 75, one line naming the prefix and the holder), whether it runs on the same
machine (another --state-dir, the prefix spelled with a trailing slash) or elsewhere (another
home: only the lease object under the prefix tells); a lease past its expiry, left by a batch
that died, is taken over; the first batch ends as if alone, and leaves no lease (nor a lock
file in the home folder)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from ..conftest import BUNDLED
from ..helpers.cli import one_line_error, run_cli
from ..helpers.servers import RangeServer, _Handler, s3_client

pytestmark = pytest.mark.slow

DEADLINE = 600  # s: a batch that has not ended by then hangs
LEASE = "out/.mzpeak-dask-lease.json"


class _Gated(_Handler):
    """Answers only once the server's gate is open (it notes that a request came)."""

    def _file(self):
        self.server.arrived.set()
        if not self.server.gate.wait(DEADLINE):
            return None
        return super()._file()


@contextmanager
def gated_server(root: Path):
    """A Range-capable HTTP server over ``root`` that holds every request until its ``gate``
    is set: a batch reading an input there stays running, holding its output prefix."""
    server = RangeServer(root)
    server.RequestHandlerClass = _Gated
    server.gate, server.arrived = threading.Event(), threading.Event()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.gate.set()
        server.shutdown()
        server.server_close()
        thread.join()


def _env(home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return dict(os.environ, HOME=str(home))


def _command(source: str, output: str, state: Path) -> list[str]:
    return ["batch", source, output, "--cluster", "inline", "--state-dir", str(state)]


def _keys(client, bucket: str, prefix: str) -> list[str]:
    listed = client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
    return sorted(k["Key"] for k in listed)


def _wait(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {DEADLINE} s"
        time.sleep(0.05)


def test_a_second_batch_into_the_same_prefix_is_refused(s3_endpoint, bucket, tmp_path):
    client = s3_client(s3_endpoint)
    client.upload_file(str(BUNDLED / "small.mzML"), bucket, "raw/a.mzML")
    served = tmp_path / "served"
    served.mkdir()
    shutil.copy(BUNDLED / "small.mzML", served / "small.mzML")
    output = f"s3://{bucket}/out"
    with gated_server(served) as server:
        manifest = tmp_path / "manifest.txt"
        manifest.write_text(f"s3://{bucket}/raw/a.mzML\n{server.url}/small.mzML\n")
        first = subprocess.Popen(
            [sys.executable, "-m", "mzpeak_dask"]
            + _command(str(manifest), output, tmp_path / "state-1"),
            env=_env(tmp_path / "home"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # the first batch holds the prefix, and waits for its input on the gated server
            _wait(lambda: server.arrived.is_set() or first.poll() is not None, "first batch")
            assert first.poll() is None, first.communicate()
            assert LEASE in _keys(client, bucket, "out/")
            here = run_cli(
                *_command(f"s3://{bucket}/raw", output + "/", tmp_path / "state-2"),
                env=_env(tmp_path / "home"),
                timeout=DEADLINE,
            )
            elsewhere = run_cli(  # another home: another machine, as far as locks tell
                *_command(f"s3://{bucket}/raw", output, tmp_path / "state-3"),
                env=_env(tmp_path / "elsewhere"),
                timeout=DEADLINE,
            )
            still_running = first.poll() is None
        finally:
            server.gate.set()
        _, stderr = first.communicate(timeout=DEADLINE)
        port = server.server_address[1]
    assert still_running
    for refused in (here, elsewhere):
        assert refused.returncode == 75, refused.stderr
        one_line_error(refused, output, "another batch", f"pid {first.pid} on ")
    assert not (tmp_path / "state-2" / "remote_state.json").exists()
    assert not (tmp_path / "state-3" / "remote_state.json").exists()
    assert first.returncode == 0, stderr
    doc = json.loads(client.get_object(Bucket=bucket, Key="out/batch_report.json")["Body"].read())
    assert doc["summary"]["converted"] == 2 and doc["summary"]["failed"] == 0
    archives = [k for k in _keys(client, bucket, "out/") if k.endswith(".mzpeak")]
    assert archives == sorted([f"out/{bucket}/raw/a.mzpeak", f"out/127.0.0.1:{port}/small.mzpeak"])
    assert LEASE not in _keys(client, bucket, "out/")  # removed at the end
    # and so is this machine's lock file: one per prefix would pile up in the home folder
    assert list((tmp_path / "home" / ".cache" / "mzpeak-dask" / "locks").iterdir()) == []


def _lease(host: str, pid: int, expires: float) -> bytes:
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires - 600))
    return json.dumps(
        {"host": host, "pid": pid, "started": started, "expires": expires, "token": "theirs"}
    ).encode()


def test_a_live_lease_refuses_and_a_stale_one_is_taken_over(s3_endpoint, bucket, tmp_path):
    client = s3_client(s3_endpoint)
    client.upload_file(str(BUNDLED / "small.mzML"), bucket, "raw/a.mzML")
    command = _command(f"s3://{bucket}/raw", f"s3://{bucket}/out", tmp_path / "state")
    live = _lease("node-7.cluster", 4242, time.time() + 3600)
    client.put_object(Bucket=bucket, Key=LEASE, Body=live)

    refused = run_cli(*command, env=_env(tmp_path / "home"), timeout=DEADLINE)

    assert refused.returncode == 75, refused.stderr
    one_line_error(refused, f"s3://{bucket}/out", "pid 4242 on node-7.cluster since ")
    assert client.get_object(Bucket=bucket, Key=LEASE)["Body"].read() == live
    assert _keys(client, bucket, "out/") == [LEASE]  # nothing written

    client.put_object(Bucket=bucket, Key=LEASE, Body=_lease("node-7", 4242, time.time() - 1))
    done = run_cli(*command, env=_env(tmp_path / "home"), timeout=DEADLINE)

    assert done.returncode == 0, done.stderr
    assert _keys(client, bucket, "out/") == [
        "out/a.mzpeak",
        "out/batch_report.html",
        "out/batch_report.json",
        "out/catalog.parquet",
    ]


def _held_once(url: str) -> None:
    """A lease of ``url`` refuses a second one (naming this process) while held, and is gone
    once released; the prefix can then be taken again."""
    from mzpeak_dask.batch.lease import LEASE, Lease
    from mzpeak_dask.errors import OutputBusyError
    from mzpeak_dask.storage import filesystem, join

    held = Lease.take(url)
    try:
        with pytest.raises(OutputBusyError) as refused:
            Lease.take(url)
    finally:
        held.release()
    assert str(refused.value).startswith(f"{url}: another batch")
    assert f"pid {os.getpid()} on " in str(refused.value)
    fs, path = filesystem(join(url, LEASE))
    assert not fs.exists(path)
    Lease.take(url).release()


def test_a_lease_is_held_once_on_every_store(store):
    _held_once(store + "/out")


def test_a_lease_renewed_and_lost(s3_endpoint, bucket):
    from mzpeak_dask.batch.lease import Lease

    url = f"s3://{bucket}/out"
    _held_once(url)
    client = s3_client(s3_endpoint)
    lease = Lease.take(url)
    try:
        assert lease.renew()
        theirs = _lease("node-7", 4242, time.time() + 3600)
        client.put_object(Bucket=bucket, Key=LEASE, Body=theirs)  # taken over meanwhile
        assert not lease.renew()
    finally:
        lease.release()
    assert client.get_object(Bucket=bucket, Key=LEASE)["Body"].read() == theirs  # not ours


def test_a_lease_left_by_a_killed_batch_here_is_taken_over(s3_endpoint, bucket):
    import socket

    from mzpeak_dask.batch.lease import Lease

    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait(timeout=DEADLINE)
    left = _lease(socket.gethostname(), ended.pid, time.time() + 3600)
    s3_client(s3_endpoint).put_object(Bucket=bucket, Key=LEASE, Body=left)
    Lease.take(f"s3://{bucket}/out").release()
    assert LEASE not in _keys(s3_client(s3_endpoint), bucket, "out/")
