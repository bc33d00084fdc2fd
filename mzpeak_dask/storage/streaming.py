"""Uploading an archive to S3 while it is written, so that little is left to send when it ends.

A run converted in this process streams its spectrum data member into the staged ZIP as the
partitions arrive; that member is most of the archive. Its bytes after the member's header
never change once written, so each whole part of them is sent as a part of a multipart
upload at once (:meth:`GrowingUpload.advance`), beside the conversion. The ZIP rewrites the
member's header (its sizes and CRC) when the member closes, so the first part, which holds
it, is sent once it has closed; the members written after it are final as each closes, and
their whole parts go at once too (:meth:`GrowingUpload.settle`), leaving the ZIP's central
directory and the last part's bytes for :meth:`GrowingUpload.complete`; S3 orders the parts
by number, not by arrival. The object appears only when the upload
completes; a failure or an interrupt aborts it, leaving nothing at the key and no parts. A
process killed outright leaves the upload recorded (:mod:`.owned`), for the next conversion
to the key to abort.

Only S3 takes parts out of order; other stores get the finished archive uploaded whole
(:func:`.uploads.upload_file`), as does an archive too small to need a part before its end.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from pathlib import Path
from typing import IO

from ..errors import MzPeakDaskError, StorageError
from .deadline import deadline
from .failures import cause
from .owned import Record
from .retry import ATTEMPTS, DEADLINE, retried
from .uploads import upload_file
from .urls import check_writable, filesystem, scheme

PART_BYTES = 8 << 20  # S3 takes parts of 5 MiB to 5 GiB, at most 10,000 of them
MIN_PART = 5 << 20  # the smallest part S3 takes but for the last
MAX_PARTS = 10_000

_following: dict[str, GrowingUpload] = {}  # staged archive path -> its upload
_lock = threading.Lock()


class GrowingUpload:
    """The multipart upload of a file being written: parts of ``part_bytes`` after the first
    are sent as they settle, and a closed member's last bytes when they make a part
    (:data:`MIN_PART`); the first part once the member holding its header is closed
    (:meth:`settle`), and the rest at :meth:`complete`."""

    def __init__(self, url: str, part_bytes: int = PART_BYTES):
        check_writable(url)
        self.url, self.part = url, part_bytes
        self.fs, path = filesystem(url)
        self.bucket, self.key, _ = self.fs.split_path(path)
        self.upload_id: str | None = None
        self.record = Record(self.bucket, self.key)  # kept while the upload is open
        self.etags: dict[int, str] = {}
        self.sent = part_bytes  # the parts before this offset are sent or being sent
        self.number = 2  # the number of the part that starts there
        self.pool = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="upload")
        self.pending: list[concurrent.futures.Future] = []
        self.lock = threading.Lock()
        self.fd: int | None = None  # the file being written (renamed into place at its end)
        self.head_final = False  # the first member is closed: its header is rewritten
        self.first_sent = False  # the first part is sent or being sent
        self.stopping = threading.Event()  # set once aborted: no request is retried then

    def advance(self, path: Path, settled: int) -> None:
        """``path``'s bytes from the first part's end up to ``settled`` are final: send the
        whole parts among them (beside the caller)."""
        with self.lock:
            if self.fd is None:
                self.fd = os.open(path, os.O_RDONLY)
            # half the part numbers at most: the rest of a huge archive needs the others
            while self.sent + self.part <= settled and self.number < MAX_PARTS // 2:
                self._submit(self.sent + self.part)
            if self.head_final and not self.first_sent and settled >= self.part:
                self.first_sent = True
                self.pending.append(self.pool.submit(self._send, 0, self.part, 1))

    def settle(self, path: Path, settled: int) -> None:
        """A member of the ZIP at ``path`` was closed: every byte up to ``settled`` is final,
        the first part too (its header rewritten): send the whole parts among them now, while
        the archive's last members are written, not at its end."""
        with self.lock:
            self.head_final = True
        self.advance(path, settled)
        with self.lock:  # the member's last bytes too, when they make a part
            if settled - self.sent >= MIN_PART and self.number < MAX_PARTS // 2:
                self._submit(settled)

    def _submit(self, stop: int) -> None:
        """Send ``[sent, stop)`` as the next part, beside the caller (the lock held)."""
        start, self.sent, number = self.sent, stop, self.number
        self.number += 1
        self.pending.append(self.pool.submit(self._send, start, stop, number))

    def watch(self, sink: IO[bytes], fp: IO[bytes], path: Path) -> _Settling:
        """``sink``, a member being written into the ZIP at ``path`` through ``fp``, whose
        every write settles its bytes: they are sent as soon as whole parts form."""
        return _Settling(sink, fp, path, self)

    def complete(self, path: Path) -> int:
        """Send the rest of the finished file at ``path`` and its first part, and complete the
        upload: the object appears at the URL. Returns its size."""
        try:
            if not self.pending:  # nothing sent before the end: one upload now
                self._close()
                return upload_file(path, self.url)
            size = os.fstat(self.fd).st_size
            first = self.number
            step = max(self.part, -(-(size - self.sent) // max(1, MAX_PARTS - first + 1)))
            last = [
                self.pool.submit(self._send, start, min(size, start + step), first + k)
                for k, start in enumerate(range(self.sent, size, step))
            ]
            if not self.first_sent:
                last.append(self.pool.submit(self._send, 0, self.part, 1))
            for future in [*self.pending, *last]:  # beside the parts still on their way
                self._sent(future)
            self.pending.clear()
            parts = [{"PartNumber": n, "ETag": e} for n, e in sorted(self.etags.items())]
            self._call(
                "complete_multipart_upload",
                UploadId=self.upload_id,
                MultipartUpload={"Parts": parts},
            )
        except BaseException as exc:
            left = self.abort(str(exc))
            if isinstance(exc, MzPeakDaskError):
                if left is None:
                    raise
                raise type(exc)(f"{exc}; {left}") from None
            if isinstance(exc, OSError):  # the staged archive could not be read
                raise StorageError(f"{self.url}: upload failed ({exc})") from None
            raise
        self._close()
        self.record.end()
        self.fs.invalidate_cache(f"{self.bucket}/{self.key}")
        return size

    def abort(self, failure: str = "") -> str | None:
        """Discard the upload and every part sent (nothing appears at the URL). Returns what
        the store kept, and why, when it did not take the abort (it is not said again when
        ``failure``, what ended the upload, says it already), else None."""
        self.stopping.set()  # the parts on their way are not sent again
        for future in self.pending:
            future.cancel()
        self._close()
        left, settled = None, True
        if self.upload_id is not None:
            try:
                self._call("abort_multipart_upload", UploadId=self.upload_id)
            except StorageError as exc:  # the original failure is what the user needs first
                settled = False  # recorded still: a later conversion to the key aborts it
                why = str(exc).removeprefix(f"{self.url}: upload failed: ")
                why = " either" if why in failure else f" ({why})"
                left = (
                    f"the multipart upload {self.upload_id} could not be aborted{why}; "
                    "its parts stay in the bucket until aborted or a lifecycle rule removes them"
                )
            self.upload_id = None
        self.record.end(settled)
        return left

    def _sent(self, future: concurrent.futures.Future) -> None:
        """Wait for a part, waited for in the order sent: once those before it are in, it is
        on its way, and takes at most a call's retries (:data:`.retry.DEADLINE`) and the
        last call's deadline (:func:`.deadline.deadline`)."""
        bound = DEADLINE + deadline()
        try:
            future.result(timeout=bound)
        except concurrent.futures.TimeoutError:
            raise StorageError(
                f"{self.url}: upload failed: a part got no answer within {bound:.0f} s"
            ) from None

    def _close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _send(self, start: int, stop: int, number: int) -> None:
        data = os.pread(self.fd, stop - start, start)
        if len(data) != stop - start:
            raise StorageError(f"{self.url}: upload failed (the staged archive is short)")
        if self.upload_id is None:
            with self.lock:
                if self.upload_id is None:
                    self.record.begin()
                    self.upload_id = self._call("create_multipart_upload")["UploadId"]
                    self.record.adopt(self.upload_id, self.fs)
        answer = self._call("upload_part", PartNumber=number, UploadId=self.upload_id, Body=data)
        self.etags[number] = answer["ETag"]

    def _call(self, method: str, **kwargs):  # noqa: ANN202 - the client's answer
        """The S3 request ``method`` about the upload's key, made again while the store fails
        it for a while (:func:`.retry.retried`; not once the upload is aborted, but for the
        abort itself)."""
        aborting = method == "abort_multipart_upload"
        try:
            return retried(
                lambda: self.fs.call_s3(method, Bucket=self.bucket, Key=self.key, **kwargs),
                None if aborting else self.stopping,
                attempts=2 if aborting else ATTEMPTS,
            )
        except StorageError:  # the store gave no answer in time (already one line)
            raise
        except Exception as exc:  # every client has its own errors; a user needs one line
            raise StorageError(f"{self.url}: upload failed: {cause(exc)}") from None


class _Settling:
    """A file that passes writes on to a ZIP member and, once a whole part more is written,
    the file's new length to an upload (a member's thousands of small writes are not each
    flushed to disk)."""

    def __init__(self, sink: IO[bytes], fp: IO[bytes], path: Path, upload: GrowingUpload):
        self.sink, self.fp, self.path, self.upload = sink, fp, path, upload

    def write(self, data) -> int:  # noqa: ANN001 - bytes or a memoryview
        written = self.sink.write(data)
        if self.fp.tell() >= self.upload.sent + self.upload.part:  # a whole part formed
            self.fp.flush()  # on disk, where the upload reads it
            self.upload.advance(self.path, self.fp.tell())
        return written


def follow(archive: Path, url: str) -> None:
    """The archive staged at ``archive`` goes to ``url``: upload it as it is written (on S3)."""
    if scheme(url) in ("s3", "s3a"):
        with _lock:
            _following[str(archive)] = GrowingUpload(url, PART_BYTES)


def following(archive: Path) -> GrowingUpload | None:
    """The upload that follows the archive being written at ``archive``, if one does."""
    return _following.get(str(archive))


def unfollow(archive: Path) -> GrowingUpload | None:
    """Stop following ``archive``; returns its upload (to complete or abort), if any."""
    with _lock:
        return _following.pop(str(archive), None)


__all__ = ["PART_BYTES", "GrowingUpload", "follow", "following", "unfollow"]
