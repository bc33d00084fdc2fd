"""Fixtures of the object-storage tests: moto's S3 server, s3rver (a second S3-compatible
server), a Google Cloud Storage emulator, Azurite (Azure blobs) and a Range-capable HTTP
server, all real servers on loopback that the real clients (s3fs, gcsfs, adlfs, fsspec's HTTP
filesystem) talk to."""

from __future__ import annotations

import shutil
import tempfile
import uuid

import pytest

from ..conftest import BUNDLED, DATA, INLINE
from ..helpers.servers import (
    azurite_server,
    gcs_server,
    node_server_missing,
    range_server,
    s3rver_options,
    s3rver_server,
)


def _skip_without(package: str, binary: str) -> None:
    """Skip the test, naming the reason, when the Node server it needs cannot start here."""
    missing = node_server_missing(package, binary)
    if missing:
        pytest.skip(missing)


@pytest.fixture(autouse=True)
def _threads_here():
    """Lazy reads run on Dask's threads in this process: a distributed client that another
    test left as the default has workers started before the S3 environment was set, and
    workers without the store's credentials cannot read it (README: workers started by hand)."""
    import dask

    with dask.config.set(scheduler="threads"):
        yield


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A Range-capable HTTP server, one per test module, serving a copy of small.mzML."""
    root = tmp_path_factory.mktemp("served")
    shutil.copy(BUNDLED / "small.mzML", root / "small.mzML")
    with range_server(root) as server:
        yield server


@pytest.fixture
def staging(tmp_path, monkeypatch):
    """The folder the staging folders are made in (the system's temporary folder, here one of
    the test's own, so that what a conversion puts there can be looked at)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture(scope="session")
def reference_archives(tmp_path_factory):
    """A folder holding copies of reference archives (ZIP and directory forms)."""
    root = tmp_path_factory.mktemp("served")
    source = DATA / "HUPO-PSI_mzPeak"
    for name in ("small.mzpeak", "small.chunked.mzpeak"):
        shutil.copy(source / name, root / name)
    shutil.copytree(source / "small.unpacked.mzpeak", root / "small.unpacked.mzpeak")
    _convert(BUNDLED / "small.mzML", root / "ours.mzpeak")  # many row groups, peaks member
    return root


def _convert(source, output) -> None:
    from mzpeak_dask import ConvertOptions, convert

    convert(source, output, ConvertOptions(peaks=True), cluster=INLINE)


@pytest.fixture(scope="session")
def http_server(reference_archives):
    """An HTTP server with Range support over ``reference_archives`` (it counts what it sends)."""
    with range_server(reference_archives) as server:
        yield server


@pytest.fixture(scope="session")
def gcs_host():
    """A Google Cloud Storage emulator on loopback (gcsfs is pointed at it)."""
    from mzpeak_dask.storage import set_default_options

    with gcs_server() as host:
        set_default_options(None)  # filesystems made before the endpoint are dropped
        yield host
        set_default_options(None)


@pytest.fixture(scope="session")
def azurite_endpoint(tmp_path_factory):
    """Azurite's blob service on loopback (adlfs is pointed at it)."""
    from mzpeak_dask.storage import set_default_options

    _skip_without("Azurite", "azurite-blob")
    with azurite_server(tmp_path_factory.mktemp("azurite")) as endpoint:
        set_default_options(None)
        yield endpoint
        set_default_options(None)


@pytest.fixture(scope="session")
def s3rver_endpoint(tmp_path_factory):
    """s3rver on loopback, a second S3 implementation beside moto, with one bucket made at its
    start (s3fs is pointed at it by storage options only while a test uses it)."""
    _skip_without("s3rver", "s3rver")
    with s3rver_server(tmp_path_factory.mktemp("s3rver"), "s3rver-runs") as endpoint:
        yield endpoint


@pytest.fixture(params=["gs", "az", "s3rver"])
def store(request):
    """A new, empty bucket (gs://; s3:// on s3rver, under a new prefix of its bucket) or
    container (az://), as the URL of its root."""
    from mzpeak_dask.storage import filesystem, set_default_options

    if request.param == "s3rver":
        endpoint = request.getfixturevalue("s3rver_endpoint")
        set_default_options(s3rver_options(endpoint))
        try:
            yield f"s3://s3rver-runs/{uuid.uuid4().hex[:12]}"
        finally:
            set_default_options(None)
        return
    request.getfixturevalue("gcs_host" if request.param == "gs" else "azurite_endpoint")
    url = f"{request.param}://runs-{uuid.uuid4().hex[:12]}"
    fs, path = filesystem(url)
    fs.mkdir(path)
    yield url
