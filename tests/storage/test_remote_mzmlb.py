"""An mzMLb object in a bucket is read by ranges where it lies: HDF5 reads its structure, the
survey its mzML dataset and indexes, each partition the chunks of the arrays it needs; the
archive equals the local conversion's and no GET asks for the whole object."""

from __future__ import annotations

import pytest

from mzpeak_dask import ConvertOptions, convert
from mzpeak_dask.errors import InputError

from ..conftest import DATA, INLINE
from ..helpers.s3 import assert_converted_by_ranges
from ..helpers.servers import s3_client

SOURCE = DATA / "mzdata" / "small.mzMLb"


def test_an_mzmlb_in_a_bucket_is_converted_by_ranges_as_locally(
    s3_endpoint, bucket, staging, tmp_path
):
    options = ConvertOptions(partition_items=10)
    assert_converted_by_ranges(s3_endpoint, bucket, staging, tmp_path, SOURCE, options)


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
