"""Reading an input's partitions one after another in this process, each fetched while the one
before it is parsed.

When one process converts every partition of an input read by ranges (a conversion run in
this process, without a cluster), it reads their byte spans in order, one ranged request
each; waiting for each request in turn leaves the processor idle for a round trip per
partition. :func:`expect_reads` tells this process the spans it is going to read: the first
is fetched alone, the others in groups of consecutive spans up to 32 MiB, one request each
(fewer, larger reads), and a read of one of them starts fetching the next group beside it; a
group the plan already fetched (the first partition, with the sampled spectra; the last ones, in
the tail with the index) is taken from those bytes, not fetched again. The
object's SHA-256 is then taken from those reads and the few bytes between them (its header
and index), so the object is read once, not once more for its digest. Processes that were
told nothing (the workers of a cluster, each reading the partitions Dask gives it) never read
ahead, and never fetch a byte they do not use.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import threading
from typing import Any

from ..errors import StorageError
from .ranges import TOTAL, fetch
from .urls import filesystem, renewed_in_forked_child

_orders: dict[str, _InOrder] = {}
_lock = threading.Lock()
# a forked child has none of the parent's reads in order (nor their threads)
renewed_in_forked_child(globals(), _orders=dict, _lock=threading.Lock)


GROUP_BYTES = 32 << 20  # consecutive spans fetched in one request, up to this much


def _groups(spans: list[tuple[int, int]]) -> list[tuple[int, int, list[tuple[int, int]]]]:
    """``(start, stop, spans)`` of each request: the first span alone (the conversion waits
    for it), then consecutive spans together up to :data:`GROUP_BYTES` (fewer, larger reads)."""
    groups: list[tuple[int, int, list[tuple[int, int]]]] = []
    for a, b in spans:
        if len(groups) > 1:
            start, stop, held = groups[-1]
            if stop == a and b - start <= GROUP_BYTES:
                groups[-1] = (start, b, [*held, (a, b)])
                continue
        groups.append((a, b, [(a, b)]))
    return groups


class _InOrder:
    """The spans of one object this process reads in order, and the ones fetched ahead."""

    def __init__(self, url: str, spans: list[tuple[int, int]], size: int | None, known: list):  # noqa: ANN001
        self.url, self.groups, self.known = url, _groups(spans), known
        self.group_of = {span: g for g, (_, _, held) in enumerate(self.groups) for span in held}
        self.pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="read-ahead")
        # hashing on a thread of its own (hashlib lets go of the interpreter lock): in order
        self.hasher = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="digest")
        self.ahead: dict[int, concurrent.futures.Future] = {}  # group -> its bytes
        self.lock = threading.Lock()
        self.digest = _Digest(url, spans, size, self.pool, known)

    def read(self, span: tuple[int, int]) -> bytes | None:
        """The span's bytes (fetched ahead with the spans after it, or now), None for a span
        not expected; reading one starts fetching the next group of spans, after its own
        bytes (one fetch at a time)."""
        g = self.group_of.get(span)
        if g is None:
            return None
        with self.lock:
            future = self.ahead.get(g)
            if future is not None:  # the next group queues behind it on the fetching thread
                self._fetch_group(g + 1)
        data = None
        if future is not None:
            try:
                data = future.result()
            except Exception:  # noqa: BLE001 - read again here, failing with its own line
                data = None
        start, stop, held = self.groups[g]
        if data is None:  # alone, then the next while it is parsed
            data = piece(self.known, start, stop)
            if data is None:
                data = _fetch(self.url, start, stop)
            with self.lock:
                self.ahead[g] = _done(data)
                self._fetch_group(g + 1)
        if span == held[-1]:
            with self.lock:
                self.ahead.pop(g, None)
        mine = data if len(held) == 1 else data[span[0] - start : span[1] - start]
        self.digest.last = self.hasher.submit(self.digest.add, span, mine)
        return mine

    def _fetch_group(self, g: int) -> None:
        """Start fetching group ``g`` (the lock held); a group skipped is dropped."""
        if g >= len(self.groups) or g in self.ahead:
            return
        for old in [k for k in self.ahead if k < g - 1]:
            self.ahead.pop(old).cancel()
        start, stop, _ = self.groups[g]
        # from what the plan fetched (the index's tail) when it holds the group
        self.ahead[g] = _held_or_fetched(self.url, start, stop, self.pool, self.known)

    def close(self) -> None:
        with self.lock:
            for future in self.ahead.values():
                future.cancel()
            self.ahead.clear()
        self.pool.shutdown(wait=False)
        self.hasher.shutdown(wait=False)


class _Digest:
    """The object's SHA-256 from the spans as they are read, in order, and the bytes between
    them (the header, the index: fetched at once, small), so that a conversion in this process
    reads the object once, not once more for its digest. :meth:`result` raises if the spans
    were not all read once in order (the caller then streams the object)."""

    def __init__(self, url: str, spans: list[tuple[int, int]], size: int | None, pool, known):  # noqa: ANN001
        """``known``: ``(offset, bytes)`` already fetched (the survey's head and tail)."""
        self.pieces: list[tuple[int, int, concurrent.futures.Future | None]] = []
        self.url, self.next, self.sha, self.lock = url, 0, hashlib.sha256(), threading.Lock()
        self.last: concurrent.futures.Future | None = None  # the latest span handed to add
        ordered = all(a < b <= c for (a, b), (c, _) in zip(spans, spans[1:], strict=False))
        self.broken = size is None or not spans or not ordered
        if self.broken:  # no digest: nothing fetched for it
            return
        at = 0
        for a, b in [*spans, (size, size)]:
            if a > at:  # the bytes before a span, or after the last
                self.pieces.append((at, a, _held_or_fetched(url, at, a, pool, known)))
            if b > a:
                self.pieces.append((a, b, None))
            at = b

    def _gaps(self) -> None:
        while self.next < len(self.pieces) and self.pieces[self.next][2] is not None:
            self.sha.update(self.pieces[self.next][2].result())
            self.next += 1

    def add(self, span: tuple[int, int], data: bytes) -> None:
        with self.lock:
            if self.broken:
                return
            try:
                self._gaps()
            except Exception:  # noqa: BLE001 - a gap that failed: the object is streamed
                self.broken = True
                return
            if self.next < len(self.pieces) and self.pieces[self.next][:2] == span:
                self.sha.update(data)
                self.next += 1
            else:  # read twice, or out of order
                self.broken = True

    def result(self) -> str:
        """The hex digest, once every span was read."""
        if self.last is not None:
            self.last.result()
        with self.lock:
            if not self.broken:
                self._gaps()
            if self.broken or self.next < len(self.pieces):
                raise StorageError(f"{self.url}: not read once in order, to be hashed")
            return self.sha.hexdigest()


def _held_or_fetched(
    url: str, start: int, stop: int, pool: concurrent.futures.Executor, known: list
) -> concurrent.futures.Future:
    """Bytes ``[start, stop)``: from ``known`` when one piece holds them, else fetched."""
    data = piece(known, start, stop)
    return _done(data) if data is not None else pool.submit(_fetch, url, start, stop)


def piece(known: list, start: int, stop: int) -> bytes | None:
    """Bytes ``[start, stop)`` when one of the ``(offset, bytes)`` in ``known`` holds them."""
    for offset, data in known:
        if offset <= start and stop <= offset + len(data):
            return data[start - offset : stop - offset]
    return None


def _done(data: bytes) -> concurrent.futures.Future:
    done: concurrent.futures.Future = concurrent.futures.Future()
    done.set_result(data)
    return done


def _fetch(url: str, start: int, stop: int) -> bytes:
    fs, path = filesystem(url)
    return fetch(fs, path, start, stop, url, TOTAL)


def expect_reads(
    url: str, spans: list[tuple[int, int]], size: int | None = None, known: list | None = None
) -> _Digest:
    """This process will read these spans of ``url``, in this order (until :func:`forget`);
    returns the object's digest as they are read (``size``: the object's, without which the
    digest fails; ``known``: ``(offset, bytes)`` of it already fetched)."""
    spans = [(int(a), int(b)) for a, b in spans if b > a]
    order = _InOrder(url, spans, size, known or [])
    with _lock:
        old = _orders.pop(url, None)
        _orders[url] = order
    if old is not None:
        old.close()
    return order.digest


def forget(url: str) -> None:
    """Stop reading ahead in ``url`` (its run ended), dropping what was fetched ahead."""
    with _lock:
        order = _orders.pop(url, None)
    if order is not None:
        order.close()


def taken(url: str, start: int, stop: int) -> bytes | None:
    """Bytes ``[start, stop)`` of ``url`` when this process expected to read them (fetched
    ahead, or now), else None; a read of an expected span starts fetching the next one."""
    order: Any = _orders.get(url)
    return None if order is None else order.read((start, stop))


__all__ = ["expect_reads", "forget", "piece", "taken"]
