"""An MGF's survey reads the whole input in order, and hashes it on the way: the archive
records that SHA-256 instead of reading the input once more. It is the digest of the file as
given (its compressed bytes for a .mgf.gz, which the survey does not read) at any chunk size."""

from __future__ import annotations

import gzip
import hashlib

import pytest

from mzpeak_dask import convert
from mzpeak_dask.readers import mgf

from ..conftest import DATA, INLINE


@pytest.mark.parametrize("chunk", [mgf.CHUNK, 4096, 4097])
def test_the_recorded_digest_is_the_files(tmp_path, monkeypatch, chunk) -> None:
    monkeypatch.setattr(mgf, "CHUNK", chunk)
    source = DATA / "mzdata" / "small.mgf"
    result = convert(source, tmp_path / "small.mzpeak", cluster=INLINE)
    assert result.input_sha256 == hashlib.sha256(source.read_bytes()).hexdigest()


def test_a_compressed_mgf_records_the_digest_of_its_compressed_bytes(tmp_path) -> None:
    packed = tmp_path / "small.mgf.gz"
    packed.write_bytes(gzip.compress((DATA / "mzdata" / "small.mgf").read_bytes()))
    result = convert(packed, tmp_path / "small.mzpeak", cluster=INLINE)
    assert result.input_sha256 == hashlib.sha256(packed.read_bytes()).hexdigest()
