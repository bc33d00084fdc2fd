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

from ..conftest import DATA
from ..helpers.cli import one_line_error, run_cli
from ..helpers.servers import RangeServer, _Handler

ARCHIVE = DATA / "HUPO-PSI_mzPeak" / "small.mzpeak"


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
