"""What a worker opens or parses from a file, kept per process (or per thread) and opened again
when the file changes on disk.

Workers read the same input or archive task after task, and what they read it through (an
HDF5 handle, a pyteomics reader with its index, an archive's memory map, a Zarr array's parsed
chunk grid) is costly to build and does not pickle, so it is built once where it is used. The
cache key is the path, the function's other arguments and the file's modification time and
size: a file written again under the same name (an archive converted again, a run exported
again) is opened afresh, never served stale.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit

from .urls import is_url


class FileCache[T]:
    """``opener(path, *args)`` cached on ``(path, args, the file's mtime and size)``, at most
    ``maxsize`` entries (least recently used dropped first, and passed to ``close``).

    ``marker`` names the file inside ``path`` whose changes count (``zarr.json`` of a Zarr
    array); ``per_thread`` keeps one cache per thread, for what threads must not share."""

    def __init__(
        self,
        opener: Callable[..., T],
        maxsize: int,
        *,
        marker: str | None = None,
        per_thread: bool = False,
        close: Callable[[T], Any] | None = None,
    ):
        functools.update_wrapper(self, opener)
        self.opener, self.maxsize, self.marker, self.close = opener, maxsize, marker, close
        self._local = threading.local() if per_thread else None
        self._shared: OrderedDict[tuple, T] = OrderedDict()
        self._lock = threading.Lock()

    def _entries(self) -> OrderedDict[tuple, T]:
        if self._local is None:
            return self._shared
        if not hasattr(self._local, "entries"):
            self._local.entries = OrderedDict()
        return self._local.entries

    def _stamp(self, path: str) -> tuple[int, int]:
        if "::file://" in path:  # inside a local single file (a ZIP store): that file's changes
            info = os.stat(unquote(urlsplit(path.split("::", 1)[1]).path))
            return info.st_mtime_ns, info.st_size
        if is_url(path):  # an object appears whole and is replaced whole (uploads are atomic)
            return 0, 0
        info = os.stat(os.path.join(path, self.marker) if self.marker else path)
        return info.st_mtime_ns, info.st_size

    def __call__(self, path: str | os.PathLike, *args: Any) -> T:
        path = os.fspath(path)
        key = (path, args, self._stamp(path))
        entries = self._entries()
        with self._lock:
            if key in entries:
                entries.move_to_end(key)
                return entries[key]
        value = self.opener(path, *args)
        with self._lock:
            entries[key] = value
            dropped = [entries.popitem(last=False)[1] for _ in range(len(entries) - self.maxsize)]
        for old in dropped:
            if self.close is not None:
                self.close(old)
        return value

    def clear(self) -> None:
        """Forget this thread's entries (and the shared ones), closing them."""
        with self._lock:
            dropped = list(self._entries().values())
            self._entries().clear()
        for old in dropped:
            if self.close is not None:
                self.close(old)


def per_file[T](
    maxsize: int,
    *,
    marker: str | None = None,
    per_thread: bool = False,
    close: Callable[[Any], Any] | None = None,
) -> Callable[[Callable[..., T]], FileCache[T]]:
    """Decorator form of :class:`FileCache`."""

    def wrap(opener: Callable[..., T]) -> FileCache[T]:
        return FileCache(opener, maxsize, marker=marker, per_thread=per_thread, close=close)

    return wrap


__all__ = ["FileCache", "per_file"]
