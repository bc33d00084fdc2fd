"""One batch at a time per output prefix in object storage.

A batch into a prefix holds it twice while it runs:

- On this machine, an OS lock (:mod:`mzpeak_dask.support.locks`: released when its process ends,
  however it ends; its file removed when it ends normally) on a file of
  ``~/.cache/mzpeak-dask/locks`` named after a hash of the
  prefix's URL, normalised (scheme in lower case, ``s3a://`` as ``s3://``, ``gcs://`` as
  ``gs://``, repeated and trailing slashes dropped): whatever ``--state-dir`` each batch uses,
  a second batch of the same user into the same prefix is refused at once.
- Across machines, a lease: the object ``PREFIX/.mzpeak-dask-lease.json`` naming its holder
  (host, pid, start) and when it expires (:data:`LEASE_SECONDS` after it was last renewed,
  by the holder's clock). It is created only if absent (a conditional PUT, ``If-None-Match:
  *``; ``ifGenerationMatch=0`` on Google Cloud Storage; a create-only upload on Azure), renewed
  by the holder every :data:`RENEW_SECONDS`, and deleted when the batch ends. A lease past
  its expiry was left by a batch that died (SIGKILL, a lost machine) or lost its store, and
  one naming a process of this machine (same host name) that has ended was left by a batch
  killed here: either is taken over, on S3 by a PUT conditional on its ETag (``If-Match``),
  so of two batches taking it over at once one wins.

A second batch is refused with one line naming the prefix and the holder (the CLI exits 75).

Limits. The cross-machine guarantee needs a store that honours conditional PUTs: AWS S3 (since
2024), Google Cloud Storage, Azure Blob Storage, and S3-compatible stores that implement
``If-None-Match`` (MinIO, recent Ceph RGW; moto and Azurite do, s3rver and the GCS emulator do
not). A store that ignores the header overwrites an existing lease instead of refusing it: the
lease is read before it is written and read back after, so a batch started while another runs
is still refused, but two batches started within the same moment on different machines may
both run. A stale lease is replaced conditionally on S3 only (elsewhere, two batches taking
over the same stale lease at once are told apart by the read-back alone). Expiry compares the
holder's clock with the reader's: clocks more than a few minutes apart make a live lease look
stale (or a stale one live for longer). A holder that cannot renew (the store unreachable for
longer than the lease) may lose its lease to another batch; it logs a warning. Another user of
this machine has another lock folder: only the lease keeps them apart. The renewal runs on a
thread of the batch's process, idle between renewals.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import OutputBusyError, OutputError, StorageError
from ..storage.keys import shown
from ..storage.urls import filesystem, join, scheme
from ..support.locks import HeldLock, holder, owner_note, try_lock, unsupported

log = logging.getLogger(__name__)

LEASE = ".mzpeak-dask-lease.json"
LEASE_SECONDS = 600.0  # a lease not renewed for this long is stale
RENEW_SECONDS = LEASE_SECONDS / 5
MAX_LEASE_BYTES = 4096  # a larger object is not a lease: not read, taken as stale
_ALIASES = {"s3a": "s3", "gcs": "gs"}


def normalised(url: str) -> str:
    """``url`` as one spelling of its prefix: the scheme in lower case (and one name of each
    store), repeated slashes collapsed, trailing slashes dropped."""
    name = scheme(url) or ""
    rest = url.split("://", 1)[-1]
    return f"{_ALIASES.get(name, name)}://{re.sub('/+', '/', rest).strip('/')}"


def lock_file(url: str) -> Path:
    """The file this machine's batches into ``url`` lock (per user)."""
    key = hashlib.sha256(normalised(url).encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return Path.home() / ".cache" / "mzpeak-dask" / "locks" / f"{key}.lock"


def _busy(url: str, who: str) -> OutputBusyError:
    return OutputBusyError(
        f"{url}: another batch is converting into this prefix ({who}); "
        "try again when it has finished"
    )


@contextlib.contextmanager
def prefix_held(url: str) -> Iterator[None]:
    """Hold the output prefix ``url`` for this batch, or raise :class:`OutputBusyError`."""
    local = _local_lock(url)
    try:
        lease = Lease.take(url)
        try:
            yield
        finally:
            lease.release()
    finally:
        if local is not None:
            local.release(remove=True)  # one file per prefix would pile up (an export's is new)


def _local_lock(url: str) -> HeldLock | None:
    path = lock_file(url)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = try_lock(path, f"{owner_note()} for {normalised(url)}")
    except OSError as exc:
        if not unsupported(exc):
            raise OutputError(f"{path}: cannot lock the batch's prefix ({exc.strerror})") from None
        log.warning("%s: no locks on this file system: only the lease guards %s", path, url)
        return None
    if lock is None:
        raise _busy(url, holder(path).split(" for ", 1)[0] or "a running process")
    return lock


class Lease:
    """The lease object of an output prefix, held by this process (see the module docstring)."""

    def __init__(self, url: str):
        self.url = url
        self.fs, self.path = filesystem(join(url, LEASE))
        self.token = uuid.uuid4().hex
        self.started = time.time()
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None

    @classmethod
    def take(cls, url: str) -> Lease:
        """The lease of ``url``, taken (a stale one taken over), or :class:`OutputBusyError`."""
        lease = cls(url)
        lease._take()
        lease._renewer = threading.Thread(
            target=lease._renew_until_released, name="mzpeak-lease", daemon=True
        )
        lease._renewer.start()
        return lease

    def _take(self) -> None:
        current = self._read()
        if current is not None and not _stale(current[0]) and not _dead_here(current[0]):
            raise _busy(self.url, _who(current[0]))
        try:  # absent: created only if still absent; stale: replaced only if still the same
            self._write(create=current is None, match=current[1] if current else None)
        except (OSError, ValueError) as exc:
            now = self._read()
            if now is not None and now[0].get("token") != self.token:
                raise _busy(self.url, _who(now[0])) from None
            raise StorageError(f"{join(self.url, LEASE)}: cannot write the lease ({exc})") from None
        back = self._read()  # a store that ignores conditions: the last writer has it
        if back is None or back[0].get("token") != self.token:
            raise _busy(self.url, _who(back[0]) if back else "a batch that just ended")

    def _doc(self) -> bytes:
        now = time.time()
        return json.dumps(
            {
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "started": _stamp(self.started),
                "renewed": _stamp(now),
                "expires": now + LEASE_SECONDS,
                "token": self.token,
            }
        ).encode()

    def _write(self, create: bool = False, match: str | None = None) -> None:
        options: dict[str, Any] = {}
        if create:
            options["mode"] = "create"
        elif match and scheme(self.url) in ("s3", "s3a"):
            options["IfMatch"] = match
        self.fs.pipe_file(self.path, self._doc(), **options)

    def _read(self) -> tuple[dict[str, Any], str | None] | None:
        """``(lease, ETag)`` as stored, or None if there is none."""
        self.fs.invalidate_cache(self.path)  # as stored now, not as listed before
        try:
            info = self.fs.info(self.path)
            size = int(info.get("size") or 0)
            body = self.fs.cat_file(self.path) if size <= MAX_LEASE_BYTES else b""
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(f"{join(self.url, LEASE)}: cannot read the lease ({exc})") from None
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            doc = {"expires": 0}  # unreadable: stale
        etag = info.get("ETag") or info.get("etag")
        return doc, str(etag) if etag else None

    def renew(self) -> bool:
        """Push the lease's expiry back; False (and a warning) if it is no longer this
        batch's: another batch took it over, or it was removed."""
        current = self._read()
        if current is None or current[0].get("token") != self.token:
            log.warning(
                "%s: this batch's lease was taken over (%s): another batch may now write "
                "into this prefix",
                self.url,
                _who(current[0]) if current else "removed",
            )
            return False
        self._write(match=current[1])  # on S3: unless another batch replaced it since
        return True

    def _renew_until_released(self) -> None:
        while not self._stop.wait(RENEW_SECONDS):
            try:
                if not self.renew():
                    return
            except Exception as exc:  # noqa: BLE001 - tried again at the next renewal
                log.warning("%s: the batch's lease was not renewed (%s)", self.url, exc)

    def release(self) -> None:
        """Stop renewing and delete the lease (if it is still this batch's)."""
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=60)
        try:
            current = self._read()
            if current is not None and current[0].get("token") == self.token:
                self.fs.rm_file(self.path)
        except Exception as exc:  # noqa: BLE001 - it expires; must not hide the batch's end
            log.warning("%s: the batch's lease was not removed (%s)", self.url, exc)


def _stale(doc: dict[str, Any]) -> bool:
    try:
        return float(doc.get("expires", 0)) < time.time()
    except (TypeError, ValueError):
        return True


def _dead_here(doc: dict[str, Any]) -> bool:
    """Whether the lease was left by a process of this machine that has ended (killed: the
    lease is taken over at once, not at its expiry)."""
    pid = doc.get("pid")
    if doc.get("host") != socket.gethostname() or not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, another user's
        return False
    return False


def _who(doc: dict[str, Any]) -> str:
    """The holder of a lease as a lock's note names it: ``pid N on HOST since TIME``."""
    fields = [shown(str(doc.get(k, "?")))[:100] for k in ("pid", "host", "started")]
    return "pid {} on {} since {}".format(*fields)


def _stamp(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


__all__ = ["LEASE", "LEASE_SECONDS", "Lease", "lock_file", "normalised", "prefix_held"]
