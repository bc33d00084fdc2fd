"""An archive converted in this process for an S3 key is sent while it is written: the whole
parts of its spectrum data member go as parts of a multipart upload during the conversion, the
first part (whose member header the ZIP rewrites at the end) last. The object equals the
archive written locally (byte for byte up to the members added at the end, whose ZIP entries
carry their files' times), and a run that fails, or is interrupted after parts were sent,
leaves nothing at the key and no upload behind."""

from __future__ import annotations

import os
import time
import zipfile
from urllib.parse import parse_qs

import pytest

from mzpeak_dask import ConvertOptions, convert
from mzpeak_dask.errors import SpectrumDecodeError
from mzpeak_dask.storage import streaming

from ..conftest import BUNDLED, INLINE
from ..helpers.archives import member_digests
from ..helpers.replicate import replicate
from ..helpers.s3 import keys, uploads
from ..helpers.servers import interrupt_once_a_part_is_in, moto_requests, s3_client

SMALL_PARTS = ConvertOptions(partition_items=40)


@pytest.fixture
def five_mib_parts(monkeypatch):
    """Parts of S3's smallest size, so that a run of a few MB streams several."""
    monkeypatch.setattr(streaming, "PART_BYTES", 5 << 20)


@pytest.fixture(scope="module")
def large_run(tmp_path_factory):
    """small.mzML replicated ten times (an archive of about 14 MB)."""
    path = tmp_path_factory.mktemp("large") / "x10.mzML"
    replicate(BUNDLED / "small.mzML", path, 10)
    return path


@pytest.fixture(scope="module")
def larger_run(tmp_path_factory):
    """small.mzML replicated twenty times: its archive passes its second part's end while
    the conversion has many partitions left to write."""
    path = tmp_path_factory.mktemp("larger") / "x20.mzML"
    replicate(BUNDLED / "small.mzML", path, 20)
    return path


def part_numbers(requests, key: str) -> list[int]:
    """The part numbers of the parts sent to ``key``, in the order the server took them."""
    return [
        int(parse_qs(asked)["partNumber"][0])
        for method, path, _, asked in requests
        if method == "PUT" and path.endswith(key) and "partNumber" in asked
    ]


@pytest.mark.slow  # a run of several parts
def test_an_archive_is_sent_as_it_is_written_and_equals_the_local_one(
    s3_endpoint, bucket, tmp_path, large_run, five_mib_parts, monkeypatch
):
    client = s3_client(s3_endpoint)
    client.upload_file(str(large_run), bucket, "in/x10.mzML")
    url = f"s3://{bucket}/in/x10.mzML"
    local = convert(url, tmp_path / "local.mzpeak", SMALL_PARTS, cluster=INLINE)
    advances, sends = [], []
    advance, send = streaming.GrowingUpload.advance, streaming.GrowingUpload._send
    monkeypatch.setattr(
        streaming.GrowingUpload,
        "advance",
        lambda self, *args: advances.append(args) or advance(self, *args),
    )
    monkeypatch.setattr(  # each part sent, and whether the first member had closed by then
        streaming.GrowingUpload,
        "_send",
        lambda self, *args: sends.append((args[-1], self.head_final)) or send(self, *args),
    )
    with moto_requests(query=True) as requests:
        sent = convert(url, f"s3://{bucket}/out/x10.mzpeak", SMALL_PARTS, cluster=INLINE)
    assert sent.output_bytes == local.output_bytes > 10 << 20
    numbers = part_numbers(requests, "/out/x10.mzpeak")
    with zipfile.ZipFile(tmp_path / "local.mzpeak") as z:
        members, directory = len(z.infolist()), z.start_dir
    # told of the file's length once a part more was written (each write told it: 1,000s),
    # and as each member closed: before the central directory was written, every member's
    # bytes were final and their whole parts sent, the first part among them (both waited
    # for the archive's end before)
    assert len(advances) <= len(numbers) + members, len(advances)
    assert max(settled for _, settled in advances) == directory, (advances, directory)
    assert sorted(numbers) == list(range(1, len(numbers) + 1)) and len(numbers) >= 3
    # the first part, which holds the data member's header, only once that member closed
    # (the ZIP rewrites the header then); parts after it before (2 when 10.5 MB were written)
    assert [closed for number, closed in sends if number == 1] == [True], sends
    assert 2 in {number for number, _ in sends}, sends
    client.download_file(bucket, "out/x10.mzpeak", str(tmp_path / "back.mzpeak"))
    back, here = (tmp_path / "back.mzpeak").read_bytes(), (tmp_path / "local.mzpeak").read_bytes()
    with zipfile.ZipFile(tmp_path / "back.mzpeak") as z:
        assert z.testzip() is None  # every member's CRC holds
        second = z.infolist()[1].header_offset  # the streamed member ends here
    assert len(back) == len(here) and back[:second] == here[:second] > b""
    assert member_digests(tmp_path / "back.mzpeak") == member_digests(tmp_path / "local.mzpeak")
    assert uploads(s3_endpoint, bucket) == []


@pytest.mark.slow  # a larger run
def test_a_run_failing_in_a_partition_leaves_nothing(
    s3_endpoint, bucket, tmp_path, larger_run, five_mib_parts
):
    """A partition that fails fails its run before the archive is written, so before any part
    is sent (an interrupt once parts were sent: the next test)."""
    text = larger_run.read_bytes()
    last = text.rindex(b"<spectrum ")  # the one before it: a plan samples the last one
    at = text.index(b"<binary>", text.rindex(b"<spectrum ", 0, last)) + len(b"<binary>")
    broken = tmp_path / "broken.mzML"  # one spectrum's base64 broken, its length kept
    broken.write_bytes(text[: at + 40] + b"!*?" + text[at + 43 :])
    s3_client(s3_endpoint).upload_file(str(broken), bucket, "in/broken.mzML")
    with moto_requests(query=True) as requests, pytest.raises(SpectrumDecodeError):
        convert(
            f"s3://{bucket}/in/broken.mzML",
            f"s3://{bucket}/out/broken.mzpeak",
            SMALL_PARTS,
            cluster=INLINE,
        )
    assert part_numbers(requests, "/out/broken.mzpeak") == []
    assert keys(s3_endpoint, bucket) == ["in/broken.mzML"]
    assert uploads(s3_endpoint, bucket) == []


@pytest.mark.slow  # a larger run, sent in parts
def test_an_interrupt_after_parts_were_sent_leaves_nothing(
    s3_endpoint, bucket, larger_run, five_mib_parts
):
    client = s3_client(s3_endpoint)
    client.upload_file(str(larger_run), bucket, "in/x20.mzML")
    watcher, sent = interrupt_once_a_part_is_in(s3_endpoint, bucket, "out/x20.mzpeak", 120)
    with pytest.raises(KeyboardInterrupt):
        convert(
            f"s3://{bucket}/in/x20.mzML",
            f"s3://{bucket}/out/x20.mzpeak",
            SMALL_PARTS,
            cluster=INLINE,
        )
        time.sleep(60)  # the run ended before the interrupt: fail below
    watcher.join()
    assert sent.is_set()  # a part was in when the run was interrupted
    assert keys(s3_endpoint, bucket) == ["in/x20.mzML"]
    assert uploads(s3_endpoint, bucket) == []


def test_a_closed_members_last_bytes_go_as_a_part_when_they_make_one(s3_endpoint, bucket, tmp_path):
    """When a member closes, its bytes after the last whole part are sent at once if they
    make a part S3 takes (5 MiB at least), with the first part: only the rest waits for the
    end."""
    data = os.urandom(21 << 20)
    path = tmp_path / "archive.bin"
    path.write_bytes(data)
    upload = streaming.GrowingUpload(f"s3://{bucket}/out/archive.bin", 8 << 20)
    upload.advance(path, 13 << 20)  # no whole part after the first yet
    assert upload.pending == []
    upload.settle(path, 14 << 20)  # a member closed at 14 MiB: parts [0, 8) and [8, 14)
    assert len(upload.pending) == 2 and upload.sent == 14 << 20
    assert upload.complete(path) == len(data)  # the rest, [14, 21), as the last part
    assert sorted(upload.etags) == [1, 2, 3]
    back = s3_client(s3_endpoint).get_object(Bucket=bucket, Key="out/archive.bin")["Body"].read()
    assert back == data
    assert uploads(s3_endpoint, bucket) == []
