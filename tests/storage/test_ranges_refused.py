"""A web server that ignores Range headers answers every read with the whole file (Python's
``http.server`` does, and so do some static hosts). Archives and inputs are read by range, so
each read of a run would bring the whole file into memory: the first such answer is refused,
its body left unread, with one line naming the URL and saying what the server lacks."""

from __future__ import annotations

import pytest

from mzpeak_dask import ConvertOptions, convert, open_archive
from mzpeak_dask.analysis import open_runs
from mzpeak_dask.errors import StorageError

from ..conftest import BUNDLED, INLINE
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
