"""URLs and their filesystems: plain paths stay paths, a missing client is one line naming
the extra to install, and the storage options reach the filesystem."""

from __future__ import annotations

import importlib
import sys

import pytest

from mzpeak_dask import open_archive
from mzpeak_dask.errors import ExtraMissingError, MzPeakDaskError, StorageError
from mzpeak_dask.storage import filesystem, is_url, local_path, scheme

from ..conftest import DATA


def test_paths_and_urls_are_told_apart():
    assert not is_url("/data/run.mzML") and not is_url("run.mzML")
    assert not is_url("file:///data/run.mzML")
    assert is_url("s3://bucket/run.mzML") and is_url("https://host/run.mzpeak")
    assert scheme("GS://bucket/x") == "gs" and scheme("C:\\runs\\x.mzML") is None
    assert local_path("file:///data/a%20b.mzML") == "/data/a b.mzML"


@pytest.mark.parametrize(
    ("url", "extra", "package"),
    [("gs://bucket/run.mzpeak", "gcs", "gcsfs"), ("az://container/run.mzpeak", "azure", "adlfs")],
)
def test_a_missing_client_names_its_extra(url, extra, package, monkeypatch):
    pytest.importorskip("fsspec")
    from mzpeak_dask.storage import urls

    registry = importlib.import_module("fsspec.registry")._registry  # the classes imported

    # the client as if not installed (the tests install every one): importing it fails
    monkeypatch.setitem(sys.modules, package, None)
    for name, cls in list(registry.items()):
        if cls.__module__.partition(".")[0] == package:
            monkeypatch.delitem(registry, name)
    monkeypatch.setattr(urls, "_filesystems", {})
    with pytest.raises(ExtraMissingError) as caught:
        filesystem(url)
    message = str(caught.value)
    assert "\n" not in message and url in message
    assert f"mzpeak-dask[{extra}]" in message and package in message
    with pytest.raises(MzPeakDaskError, match=rf"mzpeak-dask\[{extra}\]"):
        open_archive(url)


def test_an_unknown_scheme_is_one_line():
    with pytest.raises(StorageError, match="unsupported URL scheme nosuch://"):
        filesystem("nosuch://bucket/run.mzpeak")


def test_storage_options_reach_the_filesystem(s3_endpoint):
    fs, path = filesystem("s3://bucket/key.mzpeak", {"anon": True})
    assert fs.anon is True and path == "bucket/key.mzpeak"
    assert filesystem("s3://bucket/key.mzpeak")[0].anon is False


def test_file_urls_open_as_local_archives():
    path = DATA / "HUPO-PSI_mzPeak" / "small.mzpeak"
    with open_archive(path.as_uri()) as archive:
        assert not archive.storage.remote and len(archive) == 48
        assert archive.storage._map is not None  # the memory map, as for a plain path
