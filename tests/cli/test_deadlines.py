"""Every wait has a deadline ending in one line: reads of a remote Zarr store that stops
answering, the checks of earlier outputs when a batch resumes, and a scheduler whose host name
does not resolve (refused at once, not after the start deadline)."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from mzpeak_dask.export.zarr import to_zarr
from mzpeak_dask.options import ClusterOptions
from mzpeak_dask.storage.origins import SUFFIX as ORIGIN

from ..conftest import DATA
from ..helpers.cli import one_line_error, run_cli
from ..helpers.servers import RangeServer, _Handler

ARCHIVE = DATA / "HUPO-PSI_mzPeak" / "small.mzpeak"
ARCHIVE_INPUT = DATA / "mzdata" / "small.mzML"


class _Stalling(_Handler):
    """Serves the store, but never answers a GET of a path holding the server's ``stall``
    (the connection is held open until the server closes)."""

    def do_GET(self) -> None:
        if self.server.stall in self.path:  # type: ignore[attr-defined]
            self.server.held.wait()  # type: ignore[attr-defined]
            return
        super().do_GET()


def _stalling_server(root: Path, stall: str) -> RangeServer:
    server = RangeServer(root)
    server.RequestHandlerClass = _Stalling
    server.stall, server.held = stall, threading.Event()  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.slow
@pytest.mark.parametrize(
    "stall",
    [
        "/mz/zarr.json",  # an array's metadata (read by the store's chunk reader)
        "/mz/c/",  # the m/z chunks (read by mzPeak chunk)
    ],
)
def test_a_zarr_store_that_stops_answering_is_given_up_in_one_line(tmp_path, stall) -> None:
    to_zarr([ARCHIVE], tmp_path / "runs.zarr", cluster=ClusterOptions(cluster="inline"))
    server = _stalling_server(tmp_path, stall)
    try:
        run = f"{server.url}/runs.zarr/small"
        environ = {**os.environ, "MZPEAK_DASK_STORAGE_DEADLINE": "3"}
        try:
            done = run_cli("xic", run, "--mz", "445.12", env=environ, timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail(f"xic waited for ever for {stall}")
    finally:
        server.held.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()
    one_line_error(done, run, "no answer from the store within 3 s")


@pytest.mark.slow
def test_a_resume_whose_input_stops_answering_ends_in_one_line(tmp_path) -> None:
    """The input of a resumed batch is read where it lies (a web server); the second time,
    the server holds the request that would hash it, and the batch's check deadline ends it
    (the deadline of one call to a store, 600 s here, would not)."""
    served, source = tmp_path / "served", tmp_path / "source"
    served.mkdir(), source.mkdir()
    (served / "small.mzML").write_bytes((DATA / "mzdata" / "small.mzML").read_bytes())
    server = _stalling_server(served, "\0nothing")
    config = tmp_path / "batch.toml"
    config.write_text("[batch]\nhash_timeout = 2.0\n")
    out = tmp_path / "out"
    try:
        note = source / ("small.mzML" + ORIGIN)  # an input read where it lies
        note.write_text(f"{server.url}/small.mzML")
        environ = {**os.environ, "MZPEAK_DASK_STORAGE_DEADLINE": "600"}
        batch = ["batch", str(source), str(out), "--cluster", "inline", "--config", str(config)]
        first = run_cli(*batch, env=environ, timeout=300)
        assert first.returncode == 0, first.stderr
        server.stall = "/small.mzML"  # type: ignore[attr-defined]
        try:
            again = run_cli(*batch, "--resume", "-q", env=environ, timeout=120)
        except subprocess.TimeoutExpired:
            pytest.fail("the resumed batch waited for the input's server")
    finally:
        server.held.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()
    one_line_error(again, str(source / "small.mzML"), "no answer within 2 s while hashing it")
    assert (out / "small.mzpeak").is_file()  # the earlier output is kept


@pytest.mark.slow
def test_a_scheduler_whose_host_does_not_resolve_is_refused_at_once(tmp_path) -> None:
    """Refused before any wait: before, the start deadline (60 s here) ran out first."""
    scheduler = "tcp://no-such-host.invalid:8786"
    out = tmp_path / "small.mzpeak"
    done = run_cli(
        "convert", str(ARCHIVE_INPUT), str(out), "--scheduler", scheduler, "--start-timeout", "60"
    )
    one_line_error(done, scheduler, "its host no-such-host.invalid does not resolve")
    assert not out.exists()
