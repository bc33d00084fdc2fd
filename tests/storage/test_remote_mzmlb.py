"""An mzMLb object in a bucket is read by ranges where it lies: HDF5 reads its structure, the
survey its mzML dataset and indexes, each partition the chunks of the arrays it needs; the
archive equals the local conversion's and no GET asks for the whole object."""

from __future__ import annotations

import pytest

from mzpeak_dask import ConvertOptions, convert, convert_many
from mzpeak_dask.errors import InputError
from mzpeak_dask.storage.origins import SUFFIX

from ..conftest import DATA, INLINE
from ..servers import moto_requests, s3_client
from .test_remote_ranges import assert_same_members, files_in

SOURCE = DATA / "mzdata" / "small.mzMLb"


def test_an_mzmlb_in_a_bucket_is_converted_by_ranges_as_locally(
    s3_endpoint, bucket, staging, tmp_path
):
    options = ConvertOptions(partition_items=10)
    client = s3_client(s3_endpoint)
    client.upload_file(str(SOURCE), bucket, "in/small.mzMLb")
    local = tmp_path / "local.mzpeak"
    expected = convert(SOURCE, local, options, cluster=INLINE)
    seen = []
    with moto_requests() as requests:
        [result] = convert_many(
            [(f"s3://{bucket}/in/small.mzMLb", f"s3://{bucket}/out/run.mzpeak")],
            options,
            cluster=INLINE,
            on_result=lambda k, outcome: seen.append(files_in(staging)),
        )
    assert not isinstance(result, BaseException), result
    assert (result.spectra, result.points, result.input_sha256) == (
        expected.spectra,
        expected.points,
        expected.input_sha256,
    )
    assert seen == [["small.mzMLb" + SUFFIX]]  # only the URL's note: no copy of the input
    gets = [status for method, path, status in requests if method == "GET" and "/in/" in path]
    assert gets and set(gets) == {206}, gets  # ranged GETs only, never the whole object
    client.download_file(bucket, "out/run.mzpeak", str(tmp_path / "back.mzpeak"))
    assert_same_members(local, tmp_path / "back.mzpeak")


def test_a_damaged_mzmlb_in_a_bucket_fails_in_one_line_naming_its_url(
    s3_endpoint, bucket, tmp_path
):
    client = s3_client(s3_endpoint)
    head = SOURCE.read_bytes()[: 1 << 16]  # the HDF5 signature, its structure cut short
    client.put_object(Bucket=bucket, Key="in/cut.mzMLb", Body=head)
    url = f"s3://{bucket}/in/cut.mzMLb"
    with pytest.raises(InputError) as caught:
        convert(url, tmp_path / "cut.mzpeak", cluster=INLINE)
    message = str(caught.value)
    assert message.startswith(url) and "HDF5" in message, message
    assert len(message.splitlines()) == 1, message
    assert not (tmp_path / "cut.mzpeak").exists()
