"""Reading an input's partitions one after another in this process, each fetched while the one
before it is parsed.

When one process converts every partition of an input read by ranges (a conversion run in
this process, without a cluster), it reads their byte spans in order, one ranged request
each; waiting for each request in turn leaves the processor idle for a round trip per
partition. :func:`expect_reads` tells this process the spans it is going to read: a read of
one of them starts fetching the next beside it, so at most one span is held ahead. Processes
that were told nothing (the workers of a cluster, each reading the partitions Dask gives it)
never read ahead, and never fetch a byte they do not use.
"""

from __future__ import annotations

import concurrent.futures
import threading
from typing import Any

from .ranges import TOTAL, fetch
from .urls import filesystem

_orders: dict[str, _InOrder] = {}
_lock = threading.Lock()


class _InOrder:
    """The spans of one object this process reads in order, and the one fetched ahead."""

    def __init__(self, url: str, spans: list[tuple[int, int]]):
        self.url, self.spans = url, spans
        self.following = dict(zip(spans, spans[1:], strict=False))
        self.pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="read-ahead")
        self.ahead: dict[tuple[int, int], concurrent.futures.Future] = {}
        self.lock = threading.Lock()

    def take(self, span: tuple[int, int]) -> bytes | None:
        """The span's bytes if they were fetched ahead (None if not, or if that failed: the
        read is then made again, and fails with its own one-line error)."""
        with self.lock:
            future = self.ahead.pop(span, None)
            after = self.following.get(span)
            if after is not None and after not in self.ahead:
                for stale in self.ahead.values():  # a span skipped: at most one is held
                    stale.cancel()
                self.ahead = {after: self.pool.submit(_fetch, self.url, *after)}
        if future is None:
            return None
        try:
            return future.result()
        except Exception:  # noqa: BLE001 - read again, in the caller's thread
            return None

    def close(self) -> None:
        with self.lock:
            for future in self.ahead.values():
                future.cancel()
            self.ahead.clear()
        self.pool.shutdown(wait=False)


def _fetch(url: str, start: int, stop: int) -> bytes:
    fs, path = filesystem(url)
    return fetch(fs, path, start, stop, url, TOTAL)


def expect_reads(url: str, spans: list[tuple[int, int]]) -> None:
    """This process will read these spans of ``url``, in this order (until :func:`forget`)."""
    spans = [(int(a), int(b)) for a, b in spans if b > a]
    with _lock:
        old = _orders.pop(url, None)
        if len(spans) > 1:
            _orders[url] = _InOrder(url, spans)
    if old is not None:
        old.close()


def forget(url: str) -> None:
    """Stop reading ahead in ``url`` (its run ended), dropping what was fetched ahead."""
    with _lock:
        order = _orders.pop(url, None)
    if order is not None:
        order.close()


def taken(url: str, start: int, stop: int) -> bytes | None:
    """Bytes ``[start, stop)`` of ``url`` fetched ahead, else None; a read of an expected span
    starts fetching the next one."""
    order: Any = _orders.get(url)
    return None if order is None else order.take((start, stop))


__all__ = ["expect_reads", "forget", "taken"]
