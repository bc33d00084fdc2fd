"""A bucket prefix written with a trailing ``/`` (a batch's output in S3, say) stands for every
run under it, as a local folder does: listed once, its runs read where they lie; a prefix
that is a Zarr store is that store; an empty prefix is one line naming it."""

from __future__ import annotations

import pandas as pd
import pytest

from mzpeak_dask.analysis import open_runs, quantify
from mzpeak_dask.analysis.run_folders import expand_archives, expand_folders
from mzpeak_dask.errors import InputError, MzPeakDaskError

from ..analysis.test_quantify import targets_for
from ..conftest import DATA
from ..export.builds import SMALL
from ..helpers.cli import one_line_error, run_cli
from ..helpers.servers import s3_client
from .test_remote_read import upload_tree

pytestmark = pytest.mark.slow  # the shared archives and their export are built first


def _upload(endpoint: str, bucket: str, path, key: str) -> None:
    """``path`` (a file, or every file under a folder) at ``key`` in the bucket."""
    client = s3_client(endpoint)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        name = key if path.is_file() else f"{key}/{file.relative_to(path).as_posix()}"
        client.upload_file(str(file), bucket, name)


def test_a_prefix_stands_for_the_runs_under_it(s3_endpoint, bucket, exported) -> None:
    unpacked = DATA / "HUPO-PSI_mzPeak" / "small.unpacked.mzpeak"
    tree = {
        "converted/a.mzpeak": exported.archives["small.point"],
        "converted/sub/b.mzpeak": exported.archives["small.chunked"],
        "converted/sub/store.zarr": exported.store,
        "converted/unpacked.mzpeak": unpacked,
        "converted/.staging/half.mzpeak": DATA / "MANIFEST.md",  # not an archive: hidden
        "converted/catalog.parquet": exported.archives["small.point"],  # not a run by name
    }
    for key, path in tree.items():
        _upload(s3_endpoint, bucket, path, key)
    prefix = f"s3://{bucket}/converted/"
    runs = [f"{prefix}{name}" for name in ("a.mzpeak", "sub/b.mzpeak", "sub/store.zarr")]
    runs.append(f"{prefix}unpacked.mzpeak")
    assert expand_folders([prefix]) == runs
    store = f"{prefix}sub/store.zarr/"  # a store's own prefix is the store
    assert expand_folders([store]) == [store]
    assert [r.name for r in open_runs(prefix)] == [r.name for r in open_runs(runs)]
    targets = targets_for(SMALL)
    pd.testing.assert_frame_equal(quantify(prefix, targets), quantify(runs, targets))
    archives = [run for run in runs if run.endswith(".mzpeak")]  # the store left out
    assert expand_archives([prefix]) == archives
    done = run_cli("validate", prefix)  # the AWS environment points at the server
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()  # (the reference's unpacked archive has a warning)
    assert [line.split(": ", 1)[0] for line in lines] == archives and "error" not in done.stdout


def test_an_empty_prefix_is_named(s3_endpoint, bucket, reference_archives) -> None:
    url = upload_tree(s3_endpoint, bucket, reference_archives, "small.mzpeak")
    empty = f"s3://{bucket}/nothing/"
    with pytest.raises(InputError, match=f"{empty}: no mzPeak archive or Zarr store in it"):
        open_runs([url, empty])
    result = quantify([url, empty], targets_for(SMALL))
    assert set(result["run"]) == {url}
    [line] = result.attrs["failed"]
    assert line.startswith(f"{empty}: no mzPeak archive")


def test_a_web_folder_of_archives_is_named_as_unlisted(http_server) -> None:
    folder = f"{http_server.url}/"  # it serves archives, but a web server lists nothing
    with pytest.raises(InputError) as raised:
        open_runs(folder)
    message = str(raised.value)
    assert message.startswith(folder) and "\n" not in message
    assert "a web server cannot be listed" in message
    assert "give each archive's or run group's URL" in message


def test_a_damaged_run_folder_in_a_prefix_is_listed(s3_endpoint, bucket) -> None:
    client = s3_client(s3_endpoint)
    client.put_object(Bucket=bucket, Key="out/sub/damaged.mzpeak/spectra_data.parquet", Body=b"x")
    client.put_object(Bucket=bucket, Key="out/sub/damaged.mzpeak/nested.mzpeak", Body=b"x")
    prefix = f"s3://{bucket}/out/"
    assert expand_folders([prefix]) == [f"{prefix}sub/damaged.mzpeak"]  # named when opened
    with pytest.raises(MzPeakDaskError, match=f"{prefix}sub/damaged.mzpeak: no mzpeak_index"):
        open_runs(prefix)


def test_analysis_outputs_go_to_a_bucket(s3_endpoint, bucket, exported, tmp_path) -> None:
    """Tables and pictures given as URLs are written to the bucket whole (written locally,
    then uploaded); the same bytes as written to a path; a web server's URL is refused
    before any work."""
    run = str(exported.archives["small.point"])
    targets = tmp_path / "targets.csv"
    targets_for(SMALL).to_csv(targets, index=False)
    prefix = f"s3://{bucket}/analysis"
    for output in (str(tmp_path / "q.csv"), f"{prefix}/q.csv"):
        done = run_cli("quantify", run, "--targets", str(targets), "--output", output,
                       "--plot", output.replace(".csv", ".png"), "-q")  # fmt: skip
        assert done.returncode == 0, done.stderr
    done = run_cli("tic", run, "--output", f"{prefix}/tic.parquet", "--plot", f"{prefix}/t.png")
    assert done.returncode == 0, done.stderr
    client = s3_client(s3_endpoint)

    def fetched(key: str) -> bytes:
        return client.get_object(Bucket=bucket, Key=f"analysis/{key}")["Body"].read()

    assert fetched("q.csv") == (tmp_path / "q.csv").read_bytes()
    assert fetched("q.png")[:8] == fetched("t.png")[:8] == b"\x89PNG\r\n\x1a\n"
    tics = tmp_path / "tic.parquet"
    tics.write_bytes(fetched("tic.parquet"))
    assert len(pd.read_parquet(tics)) > 0
    done = run_cli("tic", run, "--output", "https://example.org/tic.csv")
    one_line_error(done, "https://example.org/tic.csv", "read-only")
