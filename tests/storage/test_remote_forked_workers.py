"""A worker forked from the command's process (Dask's ``fork`` start method, which a user may
configure; this package's clusters spawn theirs) after the command has made requests to the
store holds a copy of the command's filesystem, its event loop and its kept-alive connections.
The child must leave them alone: closing them there closed their sockets in the epoll set
parent and child share, and the command's next request on one of them waited for ever (a batch
converted every input, then never uploaded one), with a ``Task exception was never retrieved``
traceback from the child. s3rver keeps connections alive, as real stores do (moto's server
closes each one after its answer, which hides this).

And a store that never answers is given up after the storage deadline, in one line naming the
URL, never waited for without end."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid

import pytest

from ..conftest import BUNDLED
from ..helpers.cli import one_line_error, run_cli
from ..helpers.servers import s3rver_options

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="forks a child as Linux can")

# The command's side: requests that leave a connection in the client's pool, a child forked
# as Dask forks a worker (an event loop of its own, on whose thread its collector runs), and
# a request again.
COMMAND = """
import asyncio, gc, json, multiprocessing, sys
from mzpeak_dask.storage.urls import filesystem, set_default_options

def first(url):
    fs, path = filesystem(url)
    fs.pipe_file(path, b"mzpeak")
    return fs.info(path)["size"]

def worker():
    async def serve():
        gc.collect()
        await asyncio.sleep(0.2)
    asyncio.run(serve())
    gc.collect()

set_default_options(json.loads(sys.argv[1]))
print(first(sys.argv[2]), flush=True)
child = multiprocessing.get_context("fork").Process(target=worker)
child.start()
child.join(60)
fs, path = filesystem(sys.argv[2])
fs.invalidate_cache()
print(fs.info(path)["size"], flush=True)
"""


def text(output: bytes | str | None) -> str:
    """What a process that timed out had printed (bytes, then)."""
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def patient(options: dict) -> dict:
    """``options`` whose client waits long for an answer: a request that can never be answered
    then shows as the hang it is, not as a retry after s3fs's 15 s read timeout."""
    config = dict(options.get("config_kwargs", {}))
    config.update(read_timeout=600, connect_timeout=600, retries={"max_attempts": 1})
    return {**options, "config_kwargs": config}


def test_a_forked_worker_leaves_the_commands_connections_alone(s3rver_endpoint) -> None:
    url = f"s3://s3rver-runs/{uuid.uuid4().hex[:12]}/a.txt"
    options = json.dumps(patient(s3rver_options(s3rver_endpoint)))
    try:
        done = subprocess.run(
            [sys.executable, "-c", COMMAND, options, url],
            capture_output=True,
            text=True,
            timeout=120,  # the second request hung (a generous bound: it takes a second)
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
    except subprocess.TimeoutExpired as hung:
        pytest.fail(f"the request after the fork hung; stderr:\n{text(hung.stderr)}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["6", "6"]
    assert "Traceback" not in done.stderr and "never retrieved" not in done.stderr, done.stderr


SILENT_COMMANDS = {  # each first asks the store something, each gives up in one line
    "convert-from": (["convert", "s3://runs/in/small.mzML", "{out}"], "s3://runs/in/small.mzML"),
    "convert-to": (
        ["convert", str(BUNDLED / "small.mzML"), "s3://runs/out/small.mzpeak"],
        "s3://runs/out/small.mzpeak",
    ),
    "batch": (
        ["batch", "s3://runs/in/", "s3://runs/out/", "--state-dir", "{state}"],
        "s3://runs",  # the output's bucket, asked first
    ),
    "info": (["info", "s3://runs/out/small.mzpeak"], "s3://runs/out/small.mzpeak"),
}


@pytest.mark.parametrize("name", SILENT_COMMANDS)
def test_a_store_that_never_answers_is_given_up_in_one_line(name, tmp_path) -> None:
    """A server that takes connections and never answers (its listen queue accepts them)."""
    arguments, url = SILENT_COMMANDS[name]
    out, state = str(tmp_path / "out.mzpeak"), str(tmp_path / "state")
    arguments = [a.format(out=out, state=state) for a in arguments]
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        options = patient(
            {"endpoint_url": endpoint, "key": "k", "secret": "s", "client_kwargs": {}}
        )
        environ = {**os.environ, "MZPEAK_DASK_STORAGE_DEADLINE": "3"}
        more = ["--storage-options", json.dumps(options)]
        if arguments[0] == "convert":
            more += ["--cluster", "inline"]
        try:
            done = run_cli(*arguments, *more, env=environ, timeout=120)
        except subprocess.TimeoutExpired as hung:
            pytest.fail(f"the command waited for the silent store; stderr:\n{text(hung.stderr)}")
    one_line_error(done, url, "no answer from the store within 3 s")
    assert not (tmp_path / "out.mzpeak").exists()
