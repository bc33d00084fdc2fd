"""The input's SHA-256, as the archive records it: read block by block, here or in a thread
beside the task finishing a run (:class:`~mzpeak_dask.archive.digest.InputDigest`), it equals
hashlib's digest of the file's bytes whatever the file's size against the block."""

from __future__ import annotations

import hashlib
import os

import pytest

from mzpeak_dask.archive.digest import InputDigest
from mzpeak_dask.errors import InputError
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
    assert InputDigest(str(path)).result() == hashlib.sha256(data).hexdigest()


def test_the_input_digest_raises_what_hashing_raised(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="missing.mzML"):
        InputDigest(str(tmp_path / "missing.mzML")).result()


def test_an_input_digest_that_takes_too_long_is_an_error(tmp_path, monkeypatch) -> None:
    """A digest is waited for at most HASH_SECONDS (a FIFO never ends: it stands for a read
    that hangs)."""
    import os as _os

    from mzpeak_dask.archive import digest

    fifo = tmp_path / "never.mzML"
    _os.mkfifo(fifo)
    monkeypatch.setattr(digest, "HASH_SECONDS", 0.2)
    with pytest.raises(InputError, match="never.mzML: not hashed in 0.2 s"):
        InputDigest(str(fifo)).result()
    with open(fifo, "wb"):  # the hashing thread's open returns, and it ends
        pass
