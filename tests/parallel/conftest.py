"""Real Dask clusters for the tests: a scheduler plus workers started as separate processes
(:mod:`tests.helpers.clusters`)."""

from __future__ import annotations

import pytest

from ..helpers.clusters import ExternalCluster


@pytest.fixture
def external_cluster():
    cluster = ExternalCluster(workers=2)
    try:
        yield cluster
    finally:
        cluster.close()
