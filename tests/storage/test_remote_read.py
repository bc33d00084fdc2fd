"""``open_archive`` over S3 and HTTPS reads the same spectra, chromatograms and tables as the
local archive, by byte ranges only: never the whole object."""

from __future__ import annotations

import numpy as np
import pytest

from mzpeak_dask import open_archive
from mzpeak_dask.errors import ArchiveError

from ..helpers.archives import assert_same
from ..helpers.servers import s3_client

NAMES = ("small.mzpeak", "small.chunked.mzpeak", "ours.mzpeak")


def upload_tree(endpoint: str, bucket: str, root, name: str) -> str:
    client = s3_client(endpoint)
    path = root / name
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        client.upload_file(str(file), bucket, str(file.relative_to(root)))
    return f"s3://{bucket}/{name}"


@pytest.mark.parametrize("name", [*NAMES, "small.unpacked.mzpeak"])
def test_s3_archive_equals_the_local_one(s3_endpoint, bucket, reference_archives, name):
    url = upload_tree(s3_endpoint, bucket, reference_archives, name)
    with open_archive(reference_archives / name) as local, open_archive(url) as remote:
        assert remote.storage.remote and remote.path == url
        assert_same(local, remote)
        assert remote.storage.transfer.requests > 0


@pytest.mark.parametrize("name", NAMES)
def test_https_archive_equals_the_local_one_by_ranges_only(http_server, reference_archives, name):
    size = (reference_archives / name).stat().st_size
    http_server.served.reset()
    with open_archive(reference_archives / name) as local:
        with open_archive(f"{http_server.url}/{name}") as remote:
            assert_same(local, remote)
            counted = remote.storage.transfer
    log = [e for e in http_server.served.log if e[0] == "GET"]
    assert log and all(ranged is not None for _, _, ranged, _ in log)  # never the whole object
    assert all(sent < size for *_, sent in log)
    assert counted.requests == http_server.served.requests
    assert counted.bytes == http_server.served.bytes


@pytest.mark.parametrize("item", [0, 17, 31, 47])
def test_one_spectrum_after_open_is_one_request_of_its_row_group(http_server, item):
    with open_archive(f"{http_server.url}/ours.mzpeak") as remote:
        assert remote.signal("spectrum").row_groups > 10
        before = (http_server.served.requests, http_server.served.bytes)
        spectrum = remote[item]
        requests = http_server.served.requests - before[0]
        sent = http_server.served.bytes - before[1]
        signal = remote.signal("spectrum")
        groups = signal.groups_for(np.array([item]))
        md = signal.file.metadata
        group_bytes = sum(
            md.row_group(g).column(j).total_compressed_size
            for g in groups
            for j in range(md.num_columns)
        )
    assert len(spectrum.arrays["m/z array"]) > 0
    assert requests <= min(3, len(groups))  # 0 when the footer's read brought it
    assert sent <= 2 * group_bytes


def test_a_missing_remote_archive_is_one_line(http_server, s3_endpoint, bucket):
    with pytest.raises(ArchiveError, match="no such archive") as caught:
        open_archive(f"{http_server.url}/nothing.mzpeak")
    assert "\n" not in str(caught.value)
    with pytest.raises(ArchiveError, match=f"s3://{bucket}/nothing.mzpeak: no such archive"):
        open_archive(f"s3://{bucket}/nothing.mzpeak")


def test_xic_over_an_https_archive_equals_the_local_one(http_server, reference_archives):
    import pandas as pd

    from mzpeak_dask.analysis import open_runs, xic

    targets = [445.12, 1221.9906]
    remote = open_runs([f"{http_server.url}/ours.mzpeak"])
    assert remote[0].name == "ours"
    found = xic(remote, targets, ppm=20)["ours"]
    expected = xic([reference_archives / "ours.mzpeak"], targets, ppm=20)["ours"]
    pd.testing.assert_frame_equal(found, expected)
    assert (found[targets].to_numpy() > 0).any()


@pytest.mark.cluster
def test_on_a_cluster_the_caller_reads_nothing_of_remote_runs(
    http_server, reference_archives, local_client
):
    """quantify and xic given URLs and a client: the runs are opened on the workers, side by
    side, like every other read; the calling process makes no request to the server."""
    import pandas as pd

    from mzpeak_dask.analysis import quantify, xic
    from mzpeak_dask.storage.ranges import TOTAL

    names = ["ours.mzpeak", "small.mzpeak", "small.chunked.mzpeak"]
    urls = [f"{http_server.url}/{name}" for name in names]
    targets = pd.DataFrame(
        {"peak_label": ["a", "b"], "mz_mean": [445.12, 1221.9906], "mz_width": [20.0, 20.0]}
        | {"rt_min": [0.0, 0.0], "rt_max": [100.0, 100.0]}
    )
    before = TOTAL.requests
    found = quantify(urls, targets, client=local_client)
    curves = xic(urls, [445.12], ppm=20, client=local_client)
    assert TOTAL.requests == before and http_server.served.requests > 0
    assert found.attrs["failed"] == []
    expected = quantify([reference_archives / name for name in names], targets)
    figures = [c for c in found.columns if c != "run"]
    pd.testing.assert_frame_equal(found[figures], expected[figures])
    assert (found["peak_n_datapoints"] > 0).any()
    local = xic([reference_archives / "ours.mzpeak"], [445.12], ppm=20)["ours"]
    pd.testing.assert_frame_equal(curves["ours"], local)
