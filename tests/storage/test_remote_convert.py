"""Converting runs from and to S3 (and from a web server): the archive in the bucket equals the
local conversion, and a failed conversion or an interrupted upload leaves nothing at the key
and no multipart upload behind."""

from __future__ import annotations

import os
import time

import pytest

from mzpeak_dask import convert, open_archive
from mzpeak_dask.errors import InputError, MzPeakDaskError, StorageError
from mzpeak_dask.storage.uploads import upload_file

from ..conftest import BUNDLED, DATA, INLINE
from ..helpers.archives import assert_same, member_digests
from ..helpers.cli import one_line_error, run_cli
from ..helpers.s3 import keys, uploads
from ..helpers.servers import interrupt_once_a_part_is_in, s3_client


def test_convert_s3_to_s3_equals_the_local_conversion(s3_endpoint, bucket, tmp_path):
    client = s3_client(s3_endpoint)
    client.upload_file(str(BUNDLED / "small.mzML"), bucket, "in/small.mzML")
    gz = DATA / "mzdata" / "small.mzML.gz"
    client.upload_file(str(gz), bucket, "in/small.mzML.gz")
    local = tmp_path / "small.mzpeak"
    convert(BUNDLED / "small.mzML", local, cluster=INLINE)
    result = convert(
        f"s3://{bucket}/in/small.mzML", f"s3://{bucket}/out/small.mzpeak", cluster=INLINE
    )
    assert result.input == f"s3://{bucket}/in/small.mzML"
    assert result.output == f"s3://{bucket}/out/small.mzpeak"
    assert keys(s3_endpoint, bucket) == ["in/small.mzML", "in/small.mzML.gz", "out/small.mzpeak"]
    client.download_file(bucket, "out/small.mzpeak", str(tmp_path / "back.mzpeak"))
    assert member_digests(tmp_path / "back.mzpeak").keys() == member_digests(local).keys()
    with open_archive(local) as a, open_archive(f"s3://{bucket}/out/small.mzpeak") as b:
        assert_same(a, b, metadata=False)  # the source file's recorded folder differs
        assert b.file_metadata["run"] == a.file_metadata["run"]
        converted = b.file_metadata["file_description"]["source_files"][-1]
        assert (converted["name"], converted["location"]) == ("small.mzML", f"s3://{bucket}/in")
    compressed = convert(
        f"s3://{bucket}/in/small.mzML.gz", tmp_path / "gz.mzpeak", cluster=INLINE
    )  # a compressed input streamed into local staging
    plain = convert(gz, tmp_path / "gz-local.mzpeak", cluster=INLINE)
    assert (compressed.spectra, compressed.points) == (plain.spectra, plain.points)
    assert compressed.input_sha256 == plain.input_sha256
    assert uploads(s3_endpoint, bucket) == []


def test_a_bad_input_leaves_nothing_at_the_output_key(s3_endpoint, bucket):
    broken = DATA / "openms" / "FileFilter_39_input_corrupt.mzML"
    s3_client(s3_endpoint).upload_file(str(broken), bucket, "in/broken.mzML")
    url = f"s3://{bucket}/in/broken.mzML"
    result = run_cli(
        "convert",
        url,
        f"s3://{bucket}/out/broken.mzpeak",
        "--cluster",
        "inline",
        env=os.environ.copy(),
    )
    one_line_error(result, url)
    assert "staging" not in result.stderr
    assert keys(s3_endpoint, bucket) == ["in/broken.mzML"]
    assert uploads(s3_endpoint, bucket) == []
    with pytest.raises(InputError, match=f"s3://{bucket}/in/nothing.mzML: no such object"):
        convert(f"s3://{bucket}/in/nothing.mzML", f"s3://{bucket}/out/x.mzpeak", cluster=INLINE)


def test_an_existing_output_key_is_kept_without_overwrite(s3_endpoint, bucket, tmp_path):
    client = s3_client(s3_endpoint)
    client.put_object(Bucket=bucket, Key="out/small.mzpeak", Body=b"older")
    with pytest.raises(MzPeakDaskError, match="already exists"):
        convert(BUNDLED / "small.mzML", f"s3://{bucket}/out/small.mzpeak", cluster=INLINE)
    body = client.get_object(Bucket=bucket, Key="out/small.mzpeak")["Body"].read()
    assert body == b"older"


def test_an_interrupted_multipart_upload_is_aborted(s3_endpoint, bucket, tmp_path):
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(23 << 20))  # five parts of 5 MiB
    url = f"s3://{bucket}/out/big.bin"
    watcher, _ = interrupt_once_a_part_is_in(s3_endpoint, bucket, "out/big.bin", 60)
    with pytest.raises(KeyboardInterrupt):
        upload_file(big, url, part_bytes=5 << 20)
        time.sleep(30)  # the upload finished before the interrupt: fail below
    watcher.join()
    assert keys(s3_endpoint, bucket) == []
    assert uploads(s3_endpoint, bucket) == []
    assert upload_file(big, url, part_bytes=5 << 20) == big.stat().st_size
    assert keys(s3_endpoint, bucket) == ["out/big.bin"] and uploads(s3_endpoint, bucket) == []


def test_https_inputs_convert_and_https_outputs_are_refused(http_server, tmp_path):
    with pytest.raises(StorageError, match="read-only"):
        convert(BUNDLED / "small.mzML", f"{http_server.url}/x.mzpeak", cluster=INLINE)
    with pytest.raises(InputError, match="no such object"):
        convert(f"{http_server.url}/absent.mzML", tmp_path / "x.mzpeak", cluster=INLINE)
