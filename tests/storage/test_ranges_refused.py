"""A web server that ignores Range headers answers every read with the whole file (Python's
``http.server`` does, and so do some static hosts). Archives and inputs are read by range, so
each read of a run would bring the whole file into memory: the first such answer is refused,
its body left unread, with one line naming the URL and saying what the server lacks."""

from __future__ import annotations

import pandas as pd
import pytest

from mzpeak_dask import ConvertOptions, convert, open_archive
from mzpeak_dask.analysis import open_runs
from mzpeak_dask.errors import InputError, MzPeakDaskError, StorageError

from ..conftest import BUNDLED, DATA, INLINE
from ..helpers.cli import one_line_error, run_cli
from ..helpers.replicate import replicate
from ..helpers.servers import range_server

pytestmark = pytest.mark.server

SAID = "does not serve byte ranges"


@pytest.fixture(scope="module")
def no_ranges(tmp_path_factory):
    """A server without ranges over a 40 MB mzML (small.mzML replicated 12 times) and its
    archive."""
    root = tmp_path_factory.mktemp("no-ranges")
    replicate(BUNDLED / "small.mzML", root / "big.mzML", 12)
    convert(root / "big.mzML", root / "big.mzpeak", ConvertOptions(), cluster=INLINE)
    with range_server(root, ranges=False) as server:
        yield server


def _sent_at_most_half(server, name: str) -> None:
    size = (server.root / name).stat().st_size
    sent = server.served.bytes
    assert sent < size / 2, f"{sent} bytes of {size} sent: the whole-file answer was read"


@pytest.mark.parametrize("how", ["open_archive", "open_runs"])
def test_an_archive_on_a_server_without_ranges_is_refused_unread(no_ranges, how):
    url = f"{no_ranges.url}/big.mzpeak"
    no_ranges.served.reset()
    with pytest.raises(StorageError) as caught:
        open_archive(url) if how == "open_archive" else open_runs(url)
    message = str(caught.value)
    assert message.startswith(url) and SAID in message and "\n" not in message
    _sent_at_most_half(no_ranges, "big.mzpeak")


def test_converting_an_input_on_a_server_without_ranges_is_one_line(no_ranges, tmp_path):
    assert (no_ranges.root / "big.mzML").stat().st_size > 30e6
    url = f"{no_ranges.url}/big.mzML"
    output = tmp_path / "out.mzpeak"
    no_ranges.served.reset()
    done = run_cli("convert", url, str(output), "--cluster", "inline", "-q")
    one_line_error(done, url, SAID)
    assert not output.exists() and list(tmp_path.iterdir()) == []
    _sent_at_most_half(no_ranges, "big.mzML")


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A Zarr store of one run, exported from a reference archive."""
    root = tmp_path_factory.mktemp("zarr-over-http")
    source = DATA / "HUPO-PSI_mzPeak" / "small.chunked.mzpeak"
    done = run_cli("export-zarr", str(source), str(root / "runs.zarr"), "--cluster", "inline")
    assert done.returncode == 0, done.stderr
    return root, source


def test_a_zarr_store_over_http_is_read_by_its_run_groups(exported):
    """A web server lists nothing: the store's URL says to give the run groups' URLs, and a
    run group's URL is read by range like a local store."""
    from mzpeak_dask.analysis import xic

    root, source = exported
    with range_server(root) as server:
        with pytest.raises(InputError, match="cannot list a Zarr store's runs; give each run"):
            open_runs(f"{server.url}/runs.zarr")
        [run] = open_runs(f"{server.url}/runs.zarr/small.chunked")
        found = xic([run], [810.4155], ppm=20)[run.name]
    expected = xic([source], [810.4155], ppm=20)["small.chunked"]
    assert (found[810.4155] > 0).any()
    pd.testing.assert_frame_equal(found, expected)


def test_a_zarr_run_on_a_server_without_ranges_is_one_line(exported):
    from mzpeak_dask.analysis import xic

    root, _ = exported
    with range_server(root, ranges=False) as server:
        url = f"{server.url}/runs.zarr/small.chunked"
        with pytest.raises(MzPeakDaskError) as caught:
            xic(open_runs(url), [445.12], ppm=20)
    message = str(caught.value)
    assert url in message and SAID in message and "\n" not in message
