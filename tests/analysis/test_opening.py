"""Opening runs for analysis: nothing of an opened archive stays in the process once its runs
are dropped (the spectrum tables are all a run keeps), and runs far away are opened many at a
time without a client, where local ones are opened a thread per core. Measured by counters
the machine's load does not move: tracemalloc's bytes, and the requests a test server
answers at once."""

from __future__ import annotations

import gc
import tracemalloc

import dask
import pytest

from mzpeak_dask.analysis import open_runs, quantify
from mzpeak_dask.analysis.runs import OPEN_THREADS

from ..export.builds import METABO
from ..helpers.repository import linked_copies, replicated_archive
from ..helpers.servers import range_server
from .test_quantify import targets_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """20 names of one real run replicated to 3,800 spectra (FeatureFinderMetaboIdent x10)."""
    root = tmp_path_factory.mktemp("opening")
    return root, linked_copies(replicated_archive(METABO, root, 10), root, 20)


def test_dropped_runs_leave_nothing_behind(copies) -> None:
    _, paths = copies
    with dask.config.set(scheduler="threads"):
        open_runs(paths[:2])  # imports, and what a first call keeps for good
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            runs = open_runs(paths)
            held = tracemalloc.get_traced_memory()[0] - base
            assert len(runs) == len(paths)
            del runs
            gc.collect()
            kept = tracemalloc.get_traced_memory()[0] - base
        finally:
            tracemalloc.stop()
    # the runs' spectrum tables are about 76 kB each; each opened archive kept in a thread's
    # cache held about 400 kB more, and 16 of them stayed after the runs were dropped
    assert kept < 500_000, (held, kept)


@pytest.mark.server
def test_runs_far_away_are_opened_many_at_a_time(copies) -> None:
    root, paths = copies
    with range_server(root, latency=0.05) as server:
        urls = [f"{server.url}/{p.name}" for p in paths]
        with dask.config.set(scheduler="threads"):
            runs = open_runs(urls)
            assert [r.source for r in runs] == urls
            assert server.most_in_flight >= min(len(urls), OPEN_THREADS) // 2
            table = quantify(urls[:4], targets_for(METABO))
    assert set(table["run"]) == set(urls[:4])
    assert table.attrs["failed"] == []


@pytest.mark.server
def test_the_configured_thread_count_is_kept(copies) -> None:
    root, paths = copies
    with range_server(root, latency=0.05) as server:
        urls = [f"{server.url}/{p.name}" for p in paths]
        with dask.config.set(scheduler="threads", num_workers=2):
            open_runs(urls)
        # two threads (an opening may ask for two byte ranges at once)
        assert server.most_in_flight < min(len(urls), OPEN_THREADS) // 2
