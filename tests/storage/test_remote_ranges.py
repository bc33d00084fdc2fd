"""Inputs read where they lie: an uncompressed mzML or MGF object in a bucket or on a web
server is surveyed and converted by ranged reads of the object, on the workers, with no copy of
it in the staging folder; the archive equals a local conversion's and names the URL."""

from __future__ import annotations

import shutil

import pytest

from mzpeak_dask import ConvertOptions, convert, convert_many, open_archive
from mzpeak_dask.errors import MzPeakDaskError
from mzpeak_dask.storage.origins import SUFFIX

from ..conftest import BUNDLED, DATA, INLINE
from ..helpers.archives import assert_same, assert_same_members
from ..helpers.s3 import files_in
from ..helpers.servers import range_server, s3_client

pytestmark = pytest.mark.server  # an HTTP server or moto's S3 server, every test

CORRUPT = DATA / "openms" / "FileFilter_39_input_corrupt.mzML"
MZMLB = DATA / "mzdata" / "small.mzMLb"  # HDF5: read through a ranged file object
# partitions of a few spectra: each worker task reads its own ranges of the object
SMALL_PARTS = ConvertOptions(partition_items=8)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("inputs")
    for source in (BUNDLED / "small.mzML", DATA / "mzdata" / "small.mgf", MZMLB, CORRUPT):
        shutil.copy(source, root / source.name)
    with range_server(root) as server:
        yield server


@pytest.mark.parametrize("name", ["small.mzML", "small.mgf", "small.mzMLb"])
def test_https_input_is_converted_by_ranged_reads_on_the_workers(
    inputs, staging, tmp_path, local_client, name
):
    local = tmp_path / "local.mzpeak"
    source = inputs.root / name
    expected = convert(source, local, SMALL_PARTS, cluster=INLINE)
    url = f"{inputs.url}/{name}"
    seen = []
    inputs.served.reset()
    [result] = convert_many(
        [(url, tmp_path / "remote.mzpeak")],
        SMALL_PARTS,
        client=local_client,
        on_result=lambda k, outcome: seen.append(files_in(staging)),
    )
    assert not isinstance(result, BaseException), result
    assert (result.input, result.spectra, result.points) == (url, expected.spectra, expected.points)
    assert result.input_sha256 == expected.input_sha256
    assert result.input_bytes == source.stat().st_size
    # while the run was converted, the staging folder held the URL's note, never a copy
    assert seen == [[name + SUFFIX]]
    gets = [entry for entry in inputs.served.log if entry[0] == "GET"]
    assert gets and all(entry[2] is not None for entry in gets), gets  # only ranged GETs
    size = source.stat().st_size
    print(f"{name}: {len(gets)} ranged GETs, {inputs.served.bytes:,} bytes of {size:,}")
    assert_same_members(local, tmp_path / "remote.mzpeak")
    with open_archive(local) as a, open_archive(tmp_path / "remote.mzpeak") as b:
        assert_same(a, b, metadata=False)
        files = b.file_metadata["file_description"]["source_files"]
        assert (files[-1]["name"], files[-1]["location"]) == (name, inputs.url)


def test_s3_to_s3_by_ranges_equals_the_local_conversion(s3_endpoint, bucket, staging, tmp_path):
    client = s3_client(s3_endpoint)
    client.upload_file(str(BUNDLED / "small.mzML"), bucket, "in/small.mzML")
    local = tmp_path / "local.mzpeak"
    expected = convert(BUNDLED / "small.mzML", local, SMALL_PARTS, cluster=INLINE)
    seen = []
    [result] = convert_many(
        [(f"s3://{bucket}/in/small.mzML", f"s3://{bucket}/out/small.mzpeak")],
        SMALL_PARTS,
        cluster=INLINE,
        on_result=lambda k, outcome: seen.append(files_in(staging)),
    )
    assert not isinstance(result, BaseException), result
    assert result.input_sha256 == expected.input_sha256
    assert seen == [["small.mzML" + SUFFIX]]  # the archive was uploaded, no input copied
    client.download_file(bucket, "out/small.mzpeak", str(tmp_path / "back.mzpeak"))
    assert_same_members(local, tmp_path / "back.mzpeak")


def test_a_bad_remote_input_fails_alone_naming_the_url_and_spectrum(
    inputs, staging, tmp_path, local_client
):
    bad, good = f"{inputs.url}/{CORRUPT.name}", f"{inputs.url}/small.mzML"
    outcomes = convert_many(
        [(bad, tmp_path / "bad.mzpeak"), (good, tmp_path / "good.mzpeak")],
        client=local_client,
        fail_fast=False,
    )
    error, result = outcomes
    assert isinstance(error, MzPeakDaskError)
    line = str(error)
    assert "\n" not in line and line.startswith(bad) and "spectrum" in line, line
    assert not isinstance(result, BaseException) and result.spectra == 48
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "tmp") == ["good.mzpeak"]
    assert files_in(staging) == []


def test_a_scan_of_an_object_reads_large_chunks_once(inputs):
    """An MGF (no index) is scanned to its end: in chunks of megabytes, one request each,
    finding what the scan of the local file finds."""
    from mzpeak_dask.readers.bytesource import ByteSource
    from mzpeak_dask.readers.mgf import begin_offsets

    with ByteSource(str(inputs.root / "small.mgf")) as local:
        expected = begin_offsets(local)
    inputs.served.reset()
    with ByteSource(f"{inputs.url}/small.mgf") as remote:
        assert begin_offsets(remote) == expected and len(expected) == 35
    gets = [entry for entry in inputs.served.log if entry[0] == "GET"]
    assert len(gets) == 1 and gets[0][3] == (inputs.root / "small.mgf").stat().st_size
