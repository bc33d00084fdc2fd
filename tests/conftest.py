"""Shared fixtures: the real data in ../shared/data, in-process conversion options, a session
LocalCluster, and the archives and Zarr export the export and analysis tests share."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import settings

from mzpeak_dask import ClusterOptions

from .helpers import marks

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
BUNDLED = ROOT / "tests" / "data"

INPUT_SUFFIXES = (".mzML", ".mzML.gz", ".mzML.bz2", ".mzXML", ".mgf", ".mzMLb")
BROKEN = {"FileFilter_39_input_corrupt.mzML", "IndexedmzMLFile_2_broken.mzML"}


def input_files() -> list[Path]:
    """Every MS input under ../shared/data except the deliberately broken ones."""
    files = [p for p in DATA.rglob("*") if p.is_file() and p.name.endswith(INPUT_SUFFIXES)]
    return sorted(p for p in files if p.name not in BROKEN)


INLINE = ClusterOptions(cluster="inline")

# The fixtures that start a server or a cluster: a test that asks for one is marked as if it
# said so itself. A test that starts one any other way carries the mark or fails at once
# (tests/helpers/marks.py), so `make test-fast` runs none of them.
SERVER_FIXTURES = {
    "s3_endpoint",
    "bucket",
    "served",
    "http_server",
    "gcs_host",
    "azurite_endpoint",
    "s3rver_endpoint",
    "store",
}
CLUSTER_FIXTURES = {"local_client"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & SERVER_FIXTURES:
            item.add_marker(pytest.mark.server)
        if names & CLUSTER_FIXTURES:
            item.add_marker(pytest.mark.cluster)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """The running test's marks, set before its fixtures start anything."""
    marks.enforcing = True
    marks.current = frozenset(m.name for m in item.iter_markers())


@pytest.fixture(autouse=True)
def _clusters_are_marked(request):
    """A LocalCluster made in this process by an unmarked test fails it."""
    spec = sys.modules.get("distributed.deploy.spec")
    before = set(map(id, spec.SpecCluster._instances)) if spec else set()
    yield
    spec = sys.modules.get("distributed.deploy.spec")
    if spec and set(map(id, spec.SpecCluster._instances)) - before:
        marks.require("cluster", "a LocalCluster")

# One Hypothesis profile for every property test, loaded here and by name in CI
# (``--hypothesis-profile=mzpeak``): no deadline (a first example pays imports and caches, and
# the machine may be shared), 200 examples. A test that needs more or fewer examples says why.
settings.register_profile("mzpeak", deadline=None, max_examples=200)
settings.load_profile("mzpeak")


@pytest.fixture
def inline() -> ClusterOptions:
    return INLINE


@pytest.fixture(scope="session")
def local_client():
    """A real LocalCluster of two worker processes, shared by the tests that ask for it."""
    from mzpeak_dask.parallel.cluster import cluster_client

    with cluster_client(ClusterOptions(workers=2, dashboard=False)) as client:
        yield client


@pytest.fixture(scope="session")
def exported(tmp_path_factory):
    """Archives of real runs and their Zarr export (see tests/export/builds.py), built once."""
    from .export.builds import built

    return built(tmp_path_factory.mktemp("zarr-export"))


@pytest.fixture(scope="session")
def s3_endpoint():
    """The endpoint of moto's S3 server on loopback, one for the session (the AWS environment
    points at it)."""
    from mzpeak_dask.storage import set_default_options

    from .helpers.servers import s3_server

    with s3_server() as endpoint:
        set_default_options(None)  # filesystems made before the endpoint are dropped
        yield endpoint
        set_default_options(None)


@pytest.fixture
def bucket(s3_endpoint) -> str:
    """A new, empty bucket."""
    from .helpers.servers import new_bucket

    return new_bucket(s3_endpoint)
