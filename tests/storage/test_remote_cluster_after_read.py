"""A process that has already read a URL holds fsspec filesystems, their event loop and locks;
the workers of a LocalCluster it starts afterwards (spawned, never forked from it) make their
own and convert that URL."""

from __future__ import annotations

import shutil

import pytest

from mzpeak_dask import ClusterOptions, ConvertOptions, convert
from mzpeak_dask.parallel.cluster import cluster_client
from mzpeak_dask.storage.inputs import input_size

from ..conftest import BUNDLED, INLINE
from ..helpers.servers import range_server

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.slow,
]


@pytest.mark.server
@pytest.mark.cluster
def test_a_cluster_started_after_a_url_was_read_converts_that_url(tmp_path) -> None:
    """As `convert https://… --workers 2` does: the command asks the input's size (choosing
    where to run) before the cluster starts."""
    root = tmp_path / "served"
    root.mkdir()
    shutil.copy(BUNDLED / "small.mzML", root / "small.mzML")
    expected = convert(BUNDLED / "small.mzML", tmp_path / "local.mzpeak", cluster=INLINE)
    with range_server(root) as server:
        url = f"{server.url}/small.mzML"
        assert input_size(url) == (BUNDLED / "small.mzML").stat().st_size
        with cluster_client(ClusterOptions(workers=2, dashboard=False)) as client:
            options = ConvertOptions(partition_items=12)
            result = convert(url, tmp_path / "remote.mzpeak", options, client=client)
    assert (result.spectra, result.points) == (expected.spectra, expected.points)
    assert result.input_sha256 == expected.input_sha256
