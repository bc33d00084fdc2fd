"""What a bucket holds (keys, unfinished multipart uploads), and the check that an input in a
bucket is converted by ranged reads of it alone."""

from __future__ import annotations

from mzpeak_dask import convert, convert_many
from mzpeak_dask.storage.origins import SUFFIX

from ..conftest import INLINE
from .archives import assert_same_members
from .servers import moto_requests, s3_client


def keys(endpoint: str, bucket: str) -> list[str]:
    """Every key in the bucket, sorted."""
    listed = s3_client(endpoint).list_objects_v2(Bucket=bucket)
    return sorted(k["Key"] for k in listed.get("Contents", []))


def uploads(endpoint: str, bucket: str) -> list:
    """The bucket's multipart uploads still open."""
    return s3_client(endpoint).list_multipart_uploads(Bucket=bucket).get("Uploads", [])


def files_in(folder) -> list[str]:
    """The names of every file under ``folder`` (a staging folder), sorted."""
    return sorted(p.name for p in folder.rglob("*") if p.is_file())


def assert_converted_by_ranges(s3_endpoint, bucket, staging, tmp_path, source, options) -> None:
    """``source`` uploaded to the bucket and converted s3 -> s3 in this process: the same
    result and Parquet members as its local conversion, staging holding only the URL's note
    (no copy of the input), and only ranged GETs of the object (never the whole of it)."""
    name = source.name
    client = s3_client(s3_endpoint)
    client.upload_file(str(source), bucket, f"in/{name}")
    local = tmp_path / "local.mzpeak"
    expected = convert(source, local, options, cluster=INLINE)
    seen = []
    with moto_requests() as requests:
        [result] = convert_many(
            [(f"s3://{bucket}/in/{name}", f"s3://{bucket}/out/run.mzpeak")],
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
    assert seen == [[name + SUFFIX]]
    gets = [status for method, path, status in requests if method == "GET" and "/in/" in path]
    assert gets and set(gets) == {206}, gets
    client.download_file(bucket, "out/run.mzpeak", str(tmp_path / "back.mzpeak"))
    assert_same_members(local, tmp_path / "back.mzpeak")
