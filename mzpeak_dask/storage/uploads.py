"""Atomic uploads of a finished local file to an object store.

A store shows an object only when its upload completes: a single PUT, or the
CompleteMultipartUpload of a multipart upload (parts of ``part_bytes``). On any failure or
interrupt the upload is discarded (a multipart upload aborted), so nothing is left at the key
and no parts linger.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import MzPeakDaskError, StorageError
from .failures import cause
from .retry import retried
from .urls import check_writable, filesystem

PART_BYTES = 64 << 20  # parts of a multipart upload (S3 takes 5 MiB to 5 GiB)
READ_BYTES = 8 << 20


def upload_file(source: str | os.PathLike, url: str, part_bytes: int = PART_BYTES) -> int:
    """Upload ``source`` to ``url``; the object appears only complete. Returns its size. An
    upload the store failed for a while is discarded and made again (:func:`.retry.retried`)."""
    check_writable(url)
    fs, path = filesystem(url)
    size = Path(source).stat().st_size
    try:
        retried(lambda: _upload(fs, path, source, part_bytes))
    except MzPeakDaskError:
        raise
    except Exception as exc:  # every client has its own errors; a user needs one line
        raise StorageError(f"{url}: upload failed: {cause(exc)}") from None
    fs.invalidate_cache(path)
    return size


def _upload(fs, path: str, source: str | os.PathLike, part_bytes: int) -> None:  # noqa: ANN001
    """One upload of ``source`` to ``path``, discarded if anything fails or interrupts it."""
    target = fs.open(path, "wb", block_size=max(part_bytes, 5 << 20))
    try:
        with open(source, "rb") as f:
            while block := f.read(READ_BYTES):
                target.write(block)
        target.close()  # the single PUT, or CompleteMultipartUpload
    except BaseException:
        _discard(target)
        raise


def _discard(target) -> None:
    """Abort the upload (s3fs aborts its multipart upload; gcsfs cancels a resumable one)."""
    try:
        target.discard()
    except Exception:  # the original failure is what the user needs to see
        pass
    target.closed = True


__all__ = ["PART_BYTES", "upload_file"]
