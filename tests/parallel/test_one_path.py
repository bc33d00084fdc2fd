"""One path through the cluster: a run converted inline, on a LocalCluster, or on an external
scheduler that loses a worker mid-run, from a local file or an object in S3 to a local file
or an object, whole or in steps, gives the archive written inline, byte for byte."""

from __future__ import annotations

import io
import os
import re
import signal
import tempfile
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from distributed import Client

from mzpeak_dask import ConvertOptions, convert_many
from mzpeak_dask.errors import SpectrumDecodeError

from ..conftest import BUNDLED, DATA, INLINE
from ..helpers.clusters import ExternalCluster, workers_apart
from ..helpers.hostile_inputs import corrupt_binary
from ..helpers.servers import s3_client

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

INPUTS = {
    "thermo-mzML": BUNDLED / "small.mzML",
    # MS spectra interleaved with UV spectra (numbered apart: offsets corrected when finished)
    "uv-mzML": DATA
    / "HUPO-PSI_mzPeak"
    / "TOFsulfasMS4GHzDualMode+DADSpectra+UVSignal272-NoProfile.mzML",
    "tmt-mzXML": DATA / "depthcharge" / "TMT10-Trial-8.mzXML",
}
# a local input no larger than a partition is converted whole by one task; a larger one (or
# one in storage) in steps: its plan, its partitions side by side, its finishing task
SIZES = {
    "one-partition": ConvertOptions(),
    "many-partitions": ConvertOptions(partition_items=8, partition_bytes=1 << 18),
}


# where the tasks run, and where the input and the output are (workers apart see no output
# folder of this process: they run the partitions, this process the rest)
WAYS = [
    *(
        (where, store)
        for where in ("inline", "local-cluster", "external-killed")
        for store in ("local", "s3")
    ),
    ("workers-apart", "local"),
]


@pytest.fixture(scope="module")
def local(s3_endpoint):
    """A LocalCluster of 2 workers started once the S3 environment is set (workers take their
    credentials from it, as those of a conversion started by the command do)."""
    from mzpeak_dask import ClusterOptions
    from mzpeak_dask.parallel.cluster import cluster_client

    with cluster_client(ClusterOptions(workers=2)) as client:
        yield client


@pytest.fixture(scope="module")
def external(s3_endpoint):
    """``dask scheduler`` and two ``dask worker`` processes, each under a nanny that starts
    its worker again when it is killed."""
    cluster = ExternalCluster(workers=2, nanny=True)
    try:
        with Client(cluster.address) as client:
            yield client
    finally:
        cluster.close()


@pytest.fixture(scope="module")
def apart(tmp_path_factory):
    """``dask scheduler`` and two ``dask worker`` processes that cannot see the folder the
    outputs are written to (workers on other machines): the plan and the finishing task run
    in the converting process, and the partitions' parts come back to it."""
    folder = tmp_path_factory.mktemp("apart")
    with workers_apart(folder) as client:
        yield client, folder


@pytest.fixture(scope="module")
def expected(tmp_path_factory):
    """Each input's archive written inline from the local file, for each partitioning."""
    folder = tmp_path_factory.mktemp("expected")
    made = {}
    for name, source in INPUTS.items():
        for size, options in SIZES.items():
            output = folder / f"{name}.{size}.mzpeak"
            [result] = convert_many([(source, output)], options, cluster=INLINE)
            made[name, size] = result, output.read_bytes()
    return made


class Killer:
    """A progress callback that kills one worker process once a partition is written."""

    def __init__(self, client: Client):
        self.pids = list(client.run(os.getpid).values())
        self.killed = 0

    def __call__(self, _source: str, done: int, total: int) -> None:
        if not self.killed and 0 < done < total:
            os.kill(self.pids[0], signal.SIGKILL)
            self.killed = self.pids[0]


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("name", list(INPUTS))
@pytest.mark.parametrize("where,store", WAYS)
def test_every_way_writes_the_inline_archive(
    where, store, name, size, expected, tmp_path, request
) -> None:
    want_result, want_bytes = expected[name, size]
    source, options = INPUTS[name], SIZES[size]
    if where == "workers-apart":
        client, folder = request.getfixturevalue("apart")
        tmp_path = Path(tempfile.mkdtemp(dir=folder))
        assert not any(client.run(os.path.isdir, str(tmp_path)).values())  # the workers' view
    if store == "local":
        given, output = str(source), str(tmp_path / "out.mzpeak")
    else:
        endpoint, bucket = request.getfixturevalue("s3_endpoint"), request.getfixturevalue("bucket")
        key = f"{where}/{name}/{size}"
        s3_client(endpoint).upload_file(str(source), bucket, f"{key}/{source.name}")
        given, output = f"s3://{bucket}/{key}/{source.name}", f"s3://{bucket}/{key}/out.mzpeak"
    killer = None
    kwargs: dict = {"cluster": INLINE}
    if where == "local-cluster":
        kwargs = {"client": request.getfixturevalue("local")}
    elif where == "external-killed":
        client = request.getfixturevalue("external")
        killer = Killer(client)
        kwargs = {"client": client, "progress": killer}
    elif where == "workers-apart":
        kwargs = {"client": client}
    [result] = convert_many([(given, output)], options, **kwargs)
    if store == "local":
        written = Path(output).read_bytes()
    else:
        written = s3_client(endpoint).get_object(Bucket=bucket, Key=f"{key}/out.mzpeak")
        written = written["Body"].read()
    if store == "local":
        assert written == want_bytes
    else:  # the archive records the input's name and location: its URL here
        assert_same_but_the_source(written, want_bytes)
    assert (result.spectra, result.points, result.input_sha256) == (
        want_result.spectra,
        want_result.points,
        want_result.input_sha256,
    )
    if killer is not None and source.stat().st_size > options.partition_bytes:
        assert killer.killed  # a worker was killed with the run's tasks out
    if killer is not None and killer.killed:
        client = request.getfixturevalue("external")
        _wait_for_workers(client, 2)


def assert_same_but_the_source(written: bytes, wanted: bytes) -> None:
    """The same members, each Parquet member with the same rows and file metadata but the
    source file's description (its location: a URL against a path)."""
    got, want = _members(written), _members(wanted)
    assert list(got) == list(want)
    for name, (table, meta) in want.items():
        if table is not None:
            assert got[name][0].equals(table), name
            assert got[name][1] == meta, name


def _members(data: bytes) -> dict:
    out = {}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in archive.namelist():
            if name.endswith(".parquet"):
                file = pq.ParquetFile(pa.py_buffer(archive.read(name)))
                meta = dict(file.schema_arrow.metadata or {})
                meta.pop(b"file_description", None)
                out[name] = file.read(), meta
            else:
                out[name] = None, None
    return out


def _wait_for_workers(client: Client, n: int) -> None:
    """The nanny starts the killed worker again: wait for it, for the next test."""
    client.wait_for_workers(n, timeout=60)


@pytest.mark.parametrize("workers", [1, 4])
def test_any_worker_count_writes_the_inline_archive(workers, expected, tmp_path) -> None:
    """One worker or four (the matrix above has two): each partition of a run in steps
    goes to whichever worker is free, and the archive is the same bytes."""
    from mzpeak_dask import ClusterOptions
    from mzpeak_dask.parallel.cluster import cluster_client

    options = ClusterOptions(workers=workers, threads_per_worker=1, dashboard=False)
    with cluster_client(options) as client:
        for name in INPUTS:
            output = tmp_path / f"{name}.mzpeak"
            convert_many([(INPUTS[name], output)], SIZES["many-partitions"], client=client)
            assert output.read_bytes() == expected[name, "many-partitions"][1], name


def test_workers_apart_fail_one_run_alone_and_write_the_others(apart, expected, tmp_path) -> None:
    """Workers that cannot see the outputs' folder: each run's plan and finishing task run in
    this process, its partitions on the workers, several runs side by side. A run with a
    corrupt spectrum fails alone, in one line naming it, and leaves nothing; the runs beside
    it are the inline archives byte for byte."""
    client, folder = apart
    here = Path(tempfile.mkdtemp(dir=folder))
    bad = corrupt_binary(tmp_path, 30, lambda b64: b64[:20] + "%%%" + b64[23:])
    jobs = [
        (INPUTS["thermo-mzML"], here / "a.mzpeak"),
        (bad, here / "bad.mzpeak"),
        (INPUTS["tmt-mzXML"], here / "c.mzpeak"),
    ]
    outcomes = convert_many(jobs, SIZES["many-partitions"], client=client, fail_fast=False)
    assert isinstance(outcomes[1], SpectrumDecodeError)
    assert re.fullmatch(rf"{re.escape(str(bad))}: spectrum .*scan=31\b[^\n]*", str(outcomes[1]))
    assert (here / "a.mzpeak").read_bytes() == expected["thermo-mzML", "many-partitions"][1]
    assert (here / "c.mzpeak").read_bytes() == expected["tmt-mzXML", "many-partitions"][1]
    assert sorted(p.name for p in here.iterdir()) == ["a.mzpeak", "c.mzpeak"]
