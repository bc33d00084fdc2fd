"""Google Cloud Storage (gs://, gcsfs against gcp-storage-emulator), Azure blobs (az://, adlfs
against Azurite) and a second S3 implementation (s3://, s3fs against s3rver), as S3 is tested
on moto: a run converted from and to the store equals the local conversion, ``open_archive``
over the store equals the local archive, and a failed conversion leaves nothing at the
output."""

from __future__ import annotations

import pytest

from mzpeak_dask import convert, open_archive
from mzpeak_dask.errors import InputError
from mzpeak_dask.storage import filesystem

from ..conftest import BUNDLED, DATA, INLINE
from ..helpers.archives import assert_same, member_digests


def put(url: str, source) -> str:
    fs, path = filesystem(url)
    fs.put_file(str(source), path)
    return url


def listed(url: str) -> list[str]:
    fs, path = filesystem(url)
    fs.invalidate_cache()
    return sorted(p.rsplit("/", 1)[-1] for p in fs.find(path))


def test_a_run_converts_from_and_to_the_store_as_locally(store, tmp_path):
    source = put(f"{store}/in/small.mzML", BUNDLED / "small.mzML")
    local = convert(BUNDLED / "small.mzML", tmp_path / "local.mzpeak", cluster=INLINE)
    there = convert(source, f"{store}/out/small.mzpeak", cluster=INLINE)
    assert (there.input, there.output) == (source, f"{store}/out/small.mzpeak")
    assert (there.spectra, there.points, there.input_sha256) == (
        local.spectra,
        local.points,
        local.input_sha256,
    )
    back = convert(source, tmp_path / "back.mzpeak", cluster=INLINE)  # from the store only
    up = convert(BUNDLED / "small.mzML", f"{store}/out/up.mzpeak", cluster=INLINE)  # to it only
    assert up.output_bytes == local.output_bytes
    fs, path = filesystem(f"{store}/out/small.mzpeak")
    fs.get_file(path, str(tmp_path / "fetched.mzpeak"))
    assert member_digests(tmp_path / "fetched.mzpeak") == member_digests(tmp_path / "back.mzpeak")
    with open_archive(tmp_path / "local.mzpeak") as a, open_archive(there.output) as b:
        assert b.storage.remote and b.path == there.output
        assert_same(a, b, metadata=False)  # the source file's recorded folder differs
        converted = b.file_metadata["file_description"]["source_files"][-1]
        assert (converted["name"], converted["location"]) == ("small.mzML", f"{store}/in")
    assert back.input_sha256 == local.input_sha256
    assert listed(store) == ["small.mzML", "small.mzpeak", "up.mzpeak"]


def test_open_archive_over_the_store_equals_the_local_archive(store, reference_archives):
    for name in ("small.mzpeak", "ours.mzpeak"):
        url = put(f"{store}/runs/{name}", reference_archives / name)
        with open_archive(reference_archives / name) as local, open_archive(url) as remote:
            assert remote.storage.remote and remote.storage.transfer.requests > 0
            assert_same(local, remote)


def test_a_failed_conversion_leaves_nothing_in_the_store(store, tmp_path):
    broken = put(f"{store}/in/broken.mzML", DATA / "openms" / "FileFilter_39_input_corrupt.mzML")
    with pytest.raises(InputError) as caught:
        convert(broken, f"{store}/out/broken.mzpeak", cluster=INLINE)
    assert str(caught.value).startswith(broken) and "\n" not in str(caught.value)
    gz = put(f"{store}/in/small.mzML.gz", DATA / "mzdata" / "small.mzML.gz")  # staged whole
    plain = convert(DATA / "mzdata" / "small.mzML.gz", tmp_path / "gz.mzpeak", cluster=INLINE)
    assert convert(gz, tmp_path / "from-gz.mzpeak", cluster=INLINE).points == plain.points
    assert listed(store) == ["broken.mzML", "small.mzML.gz"]
