"""The input's SHA-256, as the archive records it: read block by block, here or in a thread
beside the task finishing a run, it equals hashlib's digest of the file's bytes whatever the
file's size against the block."""

from __future__ import annotations

import hashlib
import os

import pytest

from mzpeak_dask.parallel.executors import beside
from mzpeak_dask.tables import file_metadata
from mzpeak_dask.tables.file_metadata import file_sha256

BLOCK = 4096


@pytest.mark.parametrize("size", [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 3 * BLOCK + 5])
def test_blocks_hash_the_whole_file_once(tmp_path, monkeypatch, size) -> None:
    monkeypatch.setattr(file_metadata, "HASH_BLOCK", BLOCK)  # blocks the test can reach
    data = os.urandom(size)
    path = tmp_path / "input.bin"
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()
    assert beside(file_sha256, path).result() == hashlib.sha256(data).hexdigest()


def test_hashing_beside_raises_what_hashing_raised(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="missing.mzML"):
        beside(file_sha256, tmp_path / "missing.mzML").result()
