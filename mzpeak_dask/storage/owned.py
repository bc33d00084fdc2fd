"""The multipart uploads this program starts, recorded so that those a killed process left
behind can be aborted by a later conversion or batch to the same key or prefix.

S3 keeps the parts of an upload that is neither completed nor aborted, and bills them, until
a lifecycle rule removes them; a process killed mid-upload (SIGKILL, out of memory, a
wall-time limit) aborts nothing. Nothing in the bucket proves such an upload is ours:
ListMultipartUploads names only the account that started it, and the metadata given to
CreateMultipartUpload cannot be read back before the upload completes. What proves it is
the upload ID, which only the process that created the upload learns. So each upload this
program starts has a record, a small file under ``~/.cache/mzpeak-dask/uploads`` (its
endpoint, bucket, key, upload ID and owner), made before the upload is created and given the
ID as soon as the answer comes. Its process holds a lock on it (:mod:`..locks`: the kernel
drops it however the process ends) until the upload has completed or been aborted, and then
removes it. :func:`abort_dead` aborts the uploads of the records made on this host that
nobody holds any more: an upload another tool started is in no record, and one of a live
process is in a record it still holds, so neither is ever touched. (A home folder shared by
several hosts may lock per host, as NFS mounted with ``local_lock`` does: another host's
records are left to that host.) A process killed in the instant between the
server's answer and the record's update leaves a record without an ID, which is removed
(the upload it started cannot be told from another's); a bucket lifecycle rule
(AbortIncompleteMultipartUpload) is the backstop for those.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
from pathlib import Path
from typing import Any

from ..errors import MzPeakDaskError
from ..support.locks import HeldLock, owner_note, try_lock
from .urls import filesystem, scheme

log = logging.getLogger(__name__)
SUFFIX = ".upload"


def folder() -> Path:
    """Where the records are kept: beside the batches' state, surviving a reboot (the
    uploads they name do)."""
    try:
        home = Path.home()
    except RuntimeError as exc:  # no HOME and no user entry: nowhere to keep them
        raise OSError(str(exc)) from None
    return home / ".cache" / "mzpeak-dask" / "uploads"


def endpoint_of(fs: Any) -> str:
    """The endpoint ``fs`` (an s3fs filesystem) sends its requests to ("" if unknown)."""
    try:
        return str(fs.s3.meta.endpoint_url or "")
    except Exception:  # noqa: BLE001 - a record without it matches no other endpoint
        return ""


class Record:
    """The record of one upload to ``bucket``/``key``: :meth:`begin` before it is created,
    :meth:`adopt` with its ID, :meth:`end` once it is completed or aborted. Keeping no record
    (no home folder, a file system without locks) never stops an upload."""

    def __init__(self, bucket: str, key: str):
        self.bucket, self.key = bucket, key
        self.lock: HeldLock | None = None

    def begin(self) -> None:
        try:
            where = folder()
            where.mkdir(parents=True, exist_ok=True)
            for _ in range(8):  # a sweep that took a new, empty record first removes it
                self.lock = try_lock(where / f"{secrets.token_hex(8)}{SUFFIX}", owner_note())
                if self.lock is not None:
                    return
        except OSError as exc:
            log.debug("%s/%s: the upload is not recorded (%s)", self.bucket, self.key, exc)

    def adopt(self, upload_id: str, fs: Any) -> None:
        """The upload was created with ``upload_id`` on ``fs``'s endpoint."""
        if self.lock is None:
            return
        entry = {
            "endpoint": endpoint_of(fs),
            "bucket": self.bucket,
            "key": self.key,
            "upload_id": upload_id,
            "host": socket.gethostname(),
            "owner": owner_note(),
        }
        data = json.dumps(entry).encode()
        try:  # longer than the owner's note it replaces: no old byte stays after it
            os.pwrite(self.lock.fd, data, 0)
            os.ftruncate(self.lock.fd, len(data))
        except OSError as exc:
            log.debug("%s: the upload is not recorded (%s)", self.lock.path, exc)

    def end(self, settled: bool = True) -> None:
        """Release the record, removed when the upload is ``settled`` (completed or aborted);
        otherwise (its abort failed) kept for a later run to abort."""
        if self.lock is None:
            return
        self.lock.release(remove=settled)  # removed before the lock goes: no sweep reads it
        self.lock = None


def abort_dead(url: str, under: bool = False) -> list[str]:
    """Abort the uploads to the S3 object at ``url`` (to any object under the prefix ``url``,
    with ``under``) that processes of this program started and left when they died; returns
    their upload IDs. Never raises: the conversion goes on regardless."""
    if scheme(url) not in ("s3", "s3a"):
        return []
    aborted: list[str] = []
    try:
        paths = sorted(folder().glob(f"*{SUFFIX}"))
    except OSError:
        return aborted
    fs = endpoint = None
    host = socket.gethostname()
    for path in paths:
        lock = _dead(path)
        if lock is None:
            continue
        try:
            entry = _entry(path)
            if entry is None:  # no upload ID: the upload cannot be told from another's
                os.unlink(path)
                continue
            if fs is None:
                fs, where = filesystem(url)
                bucket, key, _ = fs.split_path(where)
                endpoint = endpoint_of(fs)
            if (entry["host"], entry["endpoint"], entry["bucket"]) != (host, endpoint, bucket):
                continue
            if _matches(entry["key"], key, under) and _abort(fs, entry):
                aborted.append(entry["upload_id"])
                os.unlink(path)
        except (OSError, MzPeakDaskError) as exc:
            log.debug("%s: left (%s)", path, exc)
        finally:
            lock.release()
    return aborted


def _dead(path: Path) -> HeldLock | None:
    """The lock on the record at ``path`` if its owner is gone (and the file is still the
    record at that path, not one removed while this waited), else None."""
    try:
        lock = try_lock(path, create=False)
    except OSError:
        return None
    if lock is None:
        return None
    try:
        if os.fstat(lock.fd).st_ino == os.stat(path).st_ino:
            return lock
    except OSError:
        pass
    lock.release()
    return None


def _entry(path: Path) -> dict[str, str] | None:
    """The record's fields, or None for one that never got its upload's ID."""
    with open(path, "rb") as f:
        data = f.read(1 << 16)  # a record is a line of JSON
    try:
        entry = json.loads(data)
    except ValueError:
        return None
    fields = ("host", "endpoint", "bucket", "key", "upload_id")
    if not isinstance(entry, dict) or not all(isinstance(entry.get(f), str) for f in fields):
        return None
    return entry


def _matches(recorded: str, key: str, under: bool) -> bool:
    if not under:
        return recorded == key
    prefix = key.rstrip("/")
    return not prefix or recorded.startswith(prefix + "/")


def _abort(fs: Any, entry: dict[str, str]) -> bool:
    """Abort the recorded upload; whether it is gone now (aborted, or no longer there)."""
    try:
        fs.call_s3(
            "abort_multipart_upload",
            Bucket=entry["bucket"],
            Key=entry["key"],
            UploadId=entry["upload_id"],
        )
    except FileNotFoundError:  # s3fs' NoSuchUpload: completed, aborted, or expired
        return True
    except Exception as exc:  # noqa: BLE001 - kept for the next run to try again
        log.debug("%s/%s: the dead upload was not aborted (%s)", entry["bucket"], entry["key"], exc)
        return False
    log.info("%s/%s: aborted an upload left by a process that died", entry["bucket"], entry["key"])
    return True


__all__ = ["Record", "abort_dead", "endpoint_of", "folder"]
