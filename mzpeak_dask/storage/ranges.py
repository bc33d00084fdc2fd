"""Reading byte ranges of a remote object: one ranged GET per miss, a small read-ahead cache,
and a count of the requests made and the bytes they brought.

A :class:`RangeSource` is a window ``[offset, offset + size)`` of one object (a ZIP member, or
a whole object); :meth:`RangeSource.open` gives pyarrow a file over it, and
:meth:`RangeSource.prefetch` fetches a span (a Parquet row group's column chunks) in one
request so that the reads pyarrow makes inside it cost nothing more.
"""

from __future__ import annotations

import asyncio
import io
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..errors import StorageError
from .deadline import StorageDeadlineError, deadline, url_of
from .failures import cause
from .retry import retried
from .web import http_get

READ_AHEAD = 1 << 16  # bytes a miss fetches at least (covers a Parquet footer's first read)
CACHE_BYTES = 32 << 20  # spans kept per source, least recently used dropped first


@dataclass
class Transfer:
    """Requests made and bytes received, shared by every source of one archive or input."""

    requests: int = 0
    bytes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, received: int) -> None:
        with self._lock:
            self.requests += 1
            self.bytes += received
        if self is not TOTAL:
            TOTAL.add(received)


TOTAL = Transfer()  # every request of this process (what the remote benchmark reports)


def fetch(fs: Any, path: str, start: int, stop: int, where: str, transfer: Transfer) -> bytes:
    """Bytes ``[start, stop)`` of the object in one ranged request (one line if it fails)."""
    if stop <= start:
        return b""
    try:  # made again while the store fails it for a while (a run's reads outlast that)
        data = retried(lambda: fs.cat_file(path, start=start, end=stop))
    except StorageError:  # no answer in time, or a web server that ignores ranges (web.py)
        raise
    except Exception as exc:  # every client has its own errors; a user needs one line
        raise StorageError(f"{where}: {cause(exc)}") from None
    transfer.add(len(data))
    if len(data) != stop - start:
        raise StorageError(f"{where}: {len(data)} bytes answered for {stop - start} asked")
    return data


def fetch_many(
    fs: Any, path: str, spans: list[tuple[int, int]], transfer: Transfer
) -> list[bytes | None]:
    """Bytes of each span ``[start, stop)``, fetched side by side (one request each, made
    concurrently); None for a span that failed or came short, left to a request of its own."""
    try:
        parts = fs.cat_ranges(
            [path] * len(spans), [a for a, _ in spans], [b for _, b in spans], on_error="return"
        )
    except StorageDeadlineError:  # the store does not answer: not asked once per span more
        raise
    except Exception:  # noqa: BLE001 - a client without it: one request after another
        parts = []
    out: list[bytes | None] = [None] * len(spans)
    for k, ((a, b), data) in enumerate(zip(spans, parts, strict=False)):
        if isinstance(data, bytes) and len(data) == b - a:
            transfer.add(len(data))
            out[k] = data
    return out


Span = tuple[int | None, int]  # (start, stop), or (None, n): the object's last n bytes
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")


def fetch_sized(fs: Any, path: str, spans: list[Span], transfer: Transfer):  # noqa: ANN201
    """``(size, [bytes of each span])``: ranged GETs made side by side whose answers also
    say the object's size (their Content-Range), so that no HEAD asks it first; a span
    ``(None, n)`` is the last ``n`` bytes (a suffix range, which needs no size). None when
    the store's client is not one that shows those answers (S3, HTTP) or a request failed:
    the caller then asks the size and reads as usual, and meets the failure there."""
    headers = [f"bytes=-{n}" if a is None else f"bytes={a}-{n - 1}" for a, n in spans]
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    get = {"s3": _s3_get, "http": http_get, "https": http_get}.get(protocol)
    if get is None or not hasattr(fs, "loop"):
        return None
    from fsspec.asyn import sync
    from fsspec.exceptions import FSTimeoutError

    async def both() -> list:
        return await asyncio.gather(*(get(fs, path, h) for h in headers))

    seconds = deadline()
    try:  # on the filesystem's own loop, where its client and connections belong
        answers = sync(fs.loop, both, timeout=seconds)
    except FSTimeoutError:
        where = url_of(fs, path)
        raise StorageDeadlineError(
            f"{where}: no answer from the store within {seconds:g} s (ranged GET)"
        ) from None
    except Exception:  # noqa: BLE001 - asked again the usual way, which names the failure
        return None
    sizes = set()
    for (a, n), (_, ranged, data) in zip(spans, answers, strict=True):
        match = _CONTENT_RANGE.fullmatch((ranged or "").strip())
        if match is None:
            return None
        first, last, size = (int(x) for x in match.groups())
        want = (max(0, size - n), size) if a is None else (a, min(n, size))
        if (first, last + 1) != want or len(data) != last + 1 - first:
            return None
        sizes.add(size)
    for *_, data in answers:
        transfer.add(len(data))
    return (sizes.pop(), [data for *_, data in answers]) if len(sizes) == 1 else None


async def _s3_get(fs: Any, path: str, header: str) -> tuple[int, str | None, bytes]:
    bucket, key, version = fs.split_path(path)
    asked = {"VersionId": version} if version else {}
    answer = await fs._call_s3("get_object", Bucket=bucket, Key=key, Range=header, **asked)
    try:
        return 206, answer.get("ContentRange"), await answer["Body"].read()
    finally:
        answer["Body"].close()


class RangeSource:
    """Bytes ``[offset, offset + size)`` of one object, read by range with a read-ahead cache."""

    def __init__(
        self,
        fs: Any,
        path: str,
        offset: int,
        size: int,
        where: str,
        transfer: Transfer,
        read_ahead: int = READ_AHEAD,
        tail: bool = False,
    ):
        """``tail``: a miss that reads up to the end fetches the read-ahead before it too (an
        input's index, which sits before its last bytes)."""
        self.fs, self.path, self.offset, self.size = fs, path, offset, size
        self.where, self.transfer, self.read_ahead = where, transfer, read_ahead
        self.tail = tail
        self._spans: OrderedDict[int, bytes] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def cached(self, start: int, stop: int) -> bytes | None:
        """Bytes ``[start, stop)`` if one cached span holds them all, else None."""
        with self._lock:
            for begin, data in self._spans.items():
                if begin <= start and stop <= begin + len(data):
                    self._spans.move_to_end(begin)
                    return data[start - begin : stop - begin]
        return None

    def hold(self, start: int, data: bytes) -> None:
        """Keep ``data``, the bytes from ``start``, fetched elsewhere."""
        self._keep(start, data)

    def _keep(self, begin: int, data: bytes) -> None:
        with self._lock:
            self._held += len(data) - len(self._spans.pop(begin, b""))
            self._spans[begin] = data
            while self._held > CACHE_BYTES and len(self._spans) > 1:
                self._held -= len(self._spans.popitem(last=False)[1])

    def _get(self, start: int, stop: int) -> bytes:
        begin, end = self.offset + start, self.offset + stop
        data = fetch(self.fs, self.path, begin, end, self.where, self.transfer)
        self._keep(start, data)
        return data

    def read(self, start: int, length: int) -> bytes:
        """``length`` bytes from ``start`` (fewer at the end), from the cache when it holds them."""
        start = max(0, min(start, self.size))
        stop = min(self.size, start + max(0, length))
        if stop <= start:
            return b""
        hit = self.cached(start, stop)
        if hit is not None:
            return hit
        span_stop = min(self.size, max(stop, start + self.read_ahead))
        if self.tail and span_stop == self.size:
            begin = max(0, min(start, self.size - self.read_ahead))
            return self._get(begin, span_stop)[start - begin : stop - begin]
        return self._get(start, span_stop)[: stop - start]

    def prefetch(self, start: int, stop: int) -> None:
        """Fetch ``[start, stop)`` in one request unless the cache already holds it."""
        start, stop = max(0, start), min(self.size, stop)
        if stop > start and self.cached(start, stop) is None:
            self._get(start, stop)

    def prefetch_many(self, spans: list[tuple[int, int]]) -> None:
        """Fetch the spans ``[start, stop)`` the cache lacks, side by side (one request each,
        made concurrently: a few bytes at many places cost one round trip, not one each)."""
        todo = [(a, b) for a, b in spans if b > a and self.cached(a, b) is None]
        if len(todo) < 2:
            for a, b in todo:
                self._get(a, b)
            return
        shifted = [(self.offset + a, self.offset + b) for a, b in todo]
        parts = fetch_many(self.fs, self.path, shifted, self.transfer)
        for (a, b), data in zip(todo, parts, strict=True):
            if data is not None:
                self._keep(a, data)
            else:  # its error (or a short read) as one line, from a request of its own
                self._get(a, b)

    def buffer(self) -> pa.Buffer:
        """The whole window, in one request."""
        return pa.py_buffer(self.read(0, self.size))

    def open(self) -> pa.NativeFile:
        """A read-only pyarrow file over the window."""
        return pa.PythonFile(RangeFile(self), mode="r")


class RangeFile(io.RawIOBase):
    """A seekable binary file over a :class:`RangeSource`."""

    def __init__(self, source: RangeSource):
        super().__init__()
        self.source = source
        self.position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.source.size}
        self.position = max(0, base[whence] + offset)
        return self.position

    def tell(self) -> int:
        return self.position

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = self.source.size - self.position
        data = self.source.read(self.position, size)
        self.position += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


__all__ = ["TOTAL", "RangeFile", "RangeSource", "Transfer", "fetch", "fetch_many", "fetch_sized"]
