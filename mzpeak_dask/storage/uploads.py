"""Atomic uploads of a finished local file to an object store.

A store shows an object only when its upload completes: a single PUT, or the
CompleteMultipartUpload of a multipart upload (parts of ``part_bytes``). On any failure or
interrupt the upload is discarded (a multipart upload aborted), so nothing is left at the key
and no parts linger; an S3 multipart upload is recorded while it is open (:mod:`.owned`), so
that one a killed process left is aborted by a later conversion or batch to the key.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import MzPeakDaskError, StorageError
from .failures import cause
from .owned import Record
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
    record = _recorded(target, fs)
    try:
        with open(source, "rb") as f:
            while block := f.read(READ_BYTES):
                target.write(block)
        target.close()  # the single PUT, or CompleteMultipartUpload
    except BaseException:
        _discard(target, record)
        raise
    if record is not None:
        record.end()


def _recorded(target, fs) -> Record | None:
    """For s3fs' file: the record of its multipart upload, made as soon as s3fs has created
    it (once a part's bytes are written; a small file's single PUT has none); None for other
    stores."""
    initiate = getattr(target, "_initiate_upload", None)
    if initiate is None or not hasattr(target, "mpu") or not hasattr(target, "bucket"):
        return None
    record = Record(target.bucket, target.key)

    def recorded() -> None:
        initiate()
        if target.mpu is not None:
            record.begin()
            record.adopt(target.mpu["UploadId"], fs)

    target._initiate_upload = recorded
    return record


def _discard(target, record: Record | None = None) -> None:
    """Abort the upload (s3fs aborts its multipart upload; gcsfs cancels a resumable one)."""
    try:
        target.discard()
    except Exception:  # the original failure is what the user needs to see
        pass
    target.closed = True
    if record is not None:  # kept when s3fs could not abort it: a later run does
        record.end(settled=getattr(target, "mpu", None) is None)


__all__ = ["PART_BYTES", "upload_file"]
