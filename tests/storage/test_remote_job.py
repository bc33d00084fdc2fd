"""What a conversion of an input in storage asks of the store besides its bytes: the object's
size and first bytes once per call, and its SHA-256 streamed once, by the task that finishes
the run."""

from __future__ import annotations

from collections import Counter

from mzpeak_dask import convert
from mzpeak_dask.tables.file_metadata import file_sha256

from ..conftest import BUNDLED, DATA, INLINE
from ..helpers.archives import assert_same_members
from ..helpers.servers import moto_requests, s3_client


def test_a_conversion_learns_the_size_of_its_input_with_its_first_bytes(served, tmp_path):
    served.served.reset()
    result = convert(f"{served.url}/small.mzML", tmp_path / "out.mzpeak", cluster=INLINE)
    methods = Counter(entry[0] for entry in served.served.log)
    # no HEAD: the size comes with the first bytes, in the ranged answers' Content-Range (a
    # HEAD before them, and 8 when each look asked again)
    assert methods["HEAD"] == 0, served.served.log
    # its first bytes fetched once, for its compression and format and the plan's survey
    # (the digest streams the whole object, from its start, in a GET of its own)
    size = (BUNDLED / "small.mzML").stat().st_size
    whole = f"bytes=0-{size - 1}"
    gets = [e[2] for e in served.served.log if e[0] == "GET"]
    heads = [g for g in gets if g.startswith("bytes=0-") and g != whole]
    assert len(heads) == 1 and gets.count(whole) == 1, gets
    assert result.input_bytes == (BUNDLED / "small.mzML").stat().st_size


def test_an_s3_input_is_opened_without_a_head_request(s3_endpoint, bucket, tmp_path):
    """s3 -> s3: the input's size comes with its first bytes (the ranged answer's
    Content-Range), no HEAD; every GET of it is ranged, and the archive is the local
    conversion's."""
    s3_client(s3_endpoint).upload_file(str(BUNDLED / "small.mzML"), bucket, "in/small.mzML")
    convert(BUNDLED / "small.mzML", tmp_path / "local.mzpeak", cluster=INLINE)
    with moto_requests(query=True) as seen:
        convert(f"s3://{bucket}/in/small.mzML", f"s3://{bucket}/out/small.mzpeak", cluster=INLINE)
    mine = [(method, status) for method, path, status, _ in seen if path.endswith("/in/small.mzML")]
    print(f"requests of the input: {mine}")
    assert ("HEAD", 200) not in mine and mine, mine  # one before the head and the tail
    assert {status for _, status in mine} == {206}, mine  # ranges only, never the whole object
    # head and tail, the sample (8 spans, some fetched together), the spectra, the
    # chromatograms, the digest's stream
    assert len(mine) <= 12, mine
    back = tmp_path / "back.mzpeak"
    s3_client(s3_endpoint).download_file(bucket, "out/small.mzpeak", str(back))
    assert_same_members(tmp_path / "local.mzpeak", back)


def test_a_run_in_storage_converted_on_workers_is_read_once_and_hashed_once(
    served, tmp_path, local_client
):
    """On workers, a run in storage is read by ranges: its partitions once each, and its
    SHA-256 from one stream of the object, in the task that finishes the run."""
    from mzpeak_dask import convert_many

    source = BUNDLED / "small.mzML"
    served.served.reset()
    [result] = convert_many(
        [(f"{served.url}/small.mzML", tmp_path / "out.mzpeak")], client=local_client
    )
    assert not isinstance(result, BaseException), result
    assert result.input_sha256 == file_sha256(source)
    size = source.stat().st_size
    # the coordinator's look at its format (its head); on workers the plan's survey (head
    # and tail with the index, side by side) and its sampled spectra, the partitions, and
    # the digest's stream: 2.44 times the object
    gets = [entry[2] for entry in served.served.log if entry[0] == "GET"]
    assert gets.count(f"bytes=0-{size - 1}") == 1, gets
    assert served.served.bytes < 2.5 * size, (served.served.bytes, size, served.served.log)


def test_an_object_replaced_between_two_conversions_is_read_anew(s3_endpoint, bucket, tmp_path):
    """The first bytes a conversion fetched are not served to the next one: an mzML object
    replaced by an MGF file of the same size (padded with comment lines) converts to the
    MGF file's archive, not to an mzML reading of it."""
    first = (BUNDLED / "small.mzML").read_bytes()
    mgf = (DATA / "mzdata" / "small.mgf").read_bytes()
    padding = len(first) - len(mgf)
    lines, rest = divmod(padding, 64)
    variant = tmp_path / "variant" / "small.mzML"
    variant.parent.mkdir()
    variant.write_bytes(mgf + (b"#" * 63 + b"\n") * lines + b"#" * (rest - 1) + b"\n")
    assert variant.stat().st_size == len(first)
    s3 = s3_client(s3_endpoint)
    s3.upload_file(str(BUNDLED / "small.mzML"), bucket, "in/small.mzML")
    convert(f"s3://{bucket}/in/small.mzML", tmp_path / "first.mzpeak", cluster=INLINE)
    s3.upload_file(str(variant), bucket, "in/small.mzML")
    convert(f"s3://{bucket}/in/small.mzML", tmp_path / "second.mzpeak", cluster=INLINE)
    convert(variant, tmp_path / "local.mzpeak", cluster=INLINE)
    assert_same_members(tmp_path / "local.mzpeak", tmp_path / "second.mzpeak")
