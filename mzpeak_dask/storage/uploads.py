"""Atomic uploads of a finished local file to an object store.

A store shows an object only when its upload completes: a single PUT, or the
CompleteMultipartUpload of a multipart upload (parts of ``part_bytes``). On any failure or
interrupt the upload is discarded (a multipart upload aborted), so nothing is left at the key
and no parts linger.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import StorageError
from .urls import check_writable, filesystem

PART_BYTES = 64 << 20  # parts of a multipart upload (S3 takes 5 MiB to 5 GiB)
READ_BYTES = 8 << 20


def upload_file(source: str | os.PathLike, url: str, part_bytes: int = PART_BYTES) -> int:
    """Upload ``source`` to ``url``; the object appears only complete. Returns its size."""
    check_writable(url)
    fs, path = filesystem(url)
    size = Path(source).stat().st_size
    try:
        target = fs.open(path, "wb", block_size=max(part_bytes, 5 << 20))
    except StorageError:
        raise
    except Exception as exc:
        raise StorageError(f"{url}: cannot upload ({_detail(exc)})") from None
    try:
        with open(source, "rb") as f:
            while block := f.read(READ_BYTES):
                target.write(block)
    except BaseException as exc:
        _discard(target)
        if isinstance(exc, Exception) and not isinstance(exc, StorageError):
            raise StorageError(f"{url}: upload failed ({_detail(exc)})") from None
        raise
    try:
        target.close()  # the single PUT, or CompleteMultipartUpload
    except BaseException as exc:
        _discard(target)
        if isinstance(exc, Exception) and not isinstance(exc, StorageError):
            raise StorageError(f"{url}: upload failed ({_detail(exc)})") from None
        raise
    fs.invalidate_cache(path)
    return size


def _discard(target) -> None:
    """Abort the upload (s3fs aborts its multipart upload; gcsfs cancels a resumable one)."""
    try:
        target.discard()
    except Exception:  # the original failure is what the user needs to see
        pass
    target.closed = True


def _detail(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


__all__ = ["PART_BYTES", "upload_file"]
