"""A store that never answers is given up after the storage deadline, in one line naming the
URL, never waited for without end."""

from __future__ import annotations

import json
import os
import socket
import subprocess

import pytest

from ..conftest import BUNDLED
from ..helpers.cli import one_line_error, run_cli


def text(output: bytes | str | None) -> str:
    """What a process that timed out had printed (bytes, then)."""
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def patient(options: dict) -> dict:
    """``options`` whose client waits long for an answer: a request that can never be answered
    then shows as the hang it is, not as a retry after s3fs's 15 s read timeout."""
    config = dict(options.get("config_kwargs", {}))
    config.update(read_timeout=600, connect_timeout=600, retries={"max_attempts": 1})
    return {**options, "config_kwargs": config}


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
