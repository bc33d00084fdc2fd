"""URLs of object stores and web servers, and the fsspec filesystem that reads each.

Plain paths (and ``file://`` URLs, turned back into paths) never reach fsspec: local files keep
their memory maps and their speed. ``s3://``, ``gs://`` (``gcs://``), ``az://`` (``abfs://``)
and ``http(s)://`` go through fsspec, one layer for every store; each store's client is an
optional extra, and a URL whose client is missing is one line naming the extra to install.

Credentials and endpoints come from each store's own environment (for S3 ``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``); anything else is a
storage option: the keyword arguments of the store's fsspec filesystem, given as JSON with
``--storage-options`` or in the config's ``[storage]`` table (:func:`set_default_options`).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import ExtraMissingError, StorageError
from .deadline import bounded

# scheme -> (the optional extra that installs its client, the client's module)
EXTRAS = {
    "s3": ("s3", "s3fs"),
    "s3a": ("s3", "s3fs"),
    "gs": ("gcs", "gcsfs"),
    "gcs": ("gcs", "gcsfs"),
    "az": ("azure", "adlfs"),
    "abfs": ("azure", "adlfs"),
    "abfss": ("azure", "adlfs"),
    "http": ("http", "aiohttp"),
    "https": ("http", "aiohttp"),
}
READ_ONLY = ("http", "https")
ENVIRONMENT = "MZPEAK_DASK_STORAGE_OPTIONS"  # how worker processes inherit the options


def renewed_in_forked_child(namespace: dict[str, Any], **fresh: Callable[[], Any]) -> None:
    """In every child this process forks (a LocalCluster's worker on Linux), rebind each name
    of ``fresh`` in ``namespace`` (a module's ``globals()``) to a new value of its factory: the
    child keeps none of the parent's cached objects, and none of its locks, which another of
    its threads may have held at the fork."""

    def renew() -> None:
        namespace.update({name: make() for name, make in fresh.items()})

    os.register_at_fork(after_in_child=renew)


_filesystems: dict[tuple[str, str], Any] = {}
_retired: list[Any] = []  # filesystems of options since replaced (fsspec still holds them)
_lock = threading.Lock()
_inherited: list[Any] = []  # in a forked child: the parent's filesystems, never to be closed


def _leave_the_parents_filesystems() -> None:
    """In a forked child: keep the parent's filesystems, untouched, for the child's lifetime,
    and make new ones. Each holds the parent's event loop and its open connections, which
    fsspec refuses in another process ("not fork-safe"); freeing one here would run its
    client's close on this process's loop, which closes those connections' sockets in the
    epoll set the child shares with the parent: the parent's loop would no longer hear the
    answers on them, and its next request on one would wait for ever (and the close, on the
    wrong loop, fails with a traceback). Kept referenced, they are never freed nor closed
    here; the parent alone uses and closes them."""
    global _filesystems, _lock
    _inherited.extend([*_filesystems.values(), *_retired])
    _filesystems, _lock = {}, threading.Lock()
    _retired.clear()
    asyn = sys.modules.get("fsspec.asyn")
    if asyn is not None:  # fsspec's own fork handler renews its loop but not this lock
        asyn._lock = None


os.register_at_fork(after_in_child=_leave_the_parents_filesystems)


def scheme(location: str | os.PathLike) -> str | None:
    """The URL scheme of ``location`` (``s3``, ``https``, ``file``...), None for a plain path."""
    if not isinstance(location, str):
        return None
    head, sep, _ = location.partition("://")
    if not sep or not head or not head.replace("+", "").isalnum():
        return None
    return head.lower()


def is_url(location: str | os.PathLike) -> bool:
    """Whether ``location`` is a remote URL (anything but a plain path or a ``file://`` URL)."""
    return scheme(location) not in (None, "file")


def local_path(location: str | os.PathLike) -> str | os.PathLike:
    """A ``file://`` URL as its path; anything else unchanged."""
    if scheme(location) == "file":
        return unquote(urlsplit(str(location)).path)
    return location


def check_writable(url: str) -> None:
    """Refuse an output on a read-only store (a web server)."""
    if scheme(url) in READ_ONLY:
        raise StorageError(f"{url}: {scheme(url)}:// URLs are read-only; write to a path or bucket")


def set_default_options(options: dict[str, Any] | None) -> None:
    """The storage options of this process and of the worker processes it starts (they
    inherit them through the environment variable ``MZPEAK_DASK_STORAGE_OPTIONS``)."""
    if options:
        os.environ[ENVIRONMENT] = json.dumps(options, sort_keys=True)
    else:
        os.environ.pop(ENVIRONMENT, None)
    with _lock:
        _retired.extend(_filesystems.values())
        _filesystems.clear()


def default_options() -> dict[str, Any]:
    text = os.environ.get(ENVIRONMENT)
    if not text:
        return {}
    try:
        options = json.loads(text)
    except ValueError:
        raise StorageError(f"{ENVIRONMENT} is not a JSON object") from None
    if not isinstance(options, dict):
        raise StorageError(f"{ENVIRONMENT} is not a JSON object")
    return options


def filesystem(url: str, options: dict[str, Any] | None = None) -> tuple[Any, str]:
    """The fsspec filesystem that reads ``url`` and the path inside it (one filesystem per
    scheme and options, kept for the process: its connections are reused)."""
    name = scheme(url)
    if name is None or name == "file":
        raise StorageError(f"{url}: not a URL")
    options = default_options() if options is None else options
    key = (name, json.dumps(options, sort_keys=True, default=str))
    try:
        import fsspec
    except ImportError:
        raise ExtraMissingError(_hint(url, name)) from None
    with _lock:
        fs = _filesystems.get(key)
    if fs is None:  # (fsspec's own cache may give back the one made before for the options)
        try:
            cls = fsspec.get_filesystem_class(name)
            fs = cls(**options)
        except ImportError:
            raise ExtraMissingError(_hint(url, name)) from None
        except ValueError as exc:
            if "Protocol not known" in str(exc):
                raise StorageError(f"{url}: unsupported URL scheme {name}://") from None
            raise StorageError(f"{url}: {exc}") from None
        except TypeError as exc:
            raise StorageError(f"{url}: storage options not accepted ({exc})") from None
        fs = bounded(fs)  # every blocking call of it given up after the deadline
        with _lock:
            _filesystems[key] = fs
    return fs, fs._strip_protocol(url) if name not in READ_ONLY else url


def _hint(url: str, name: str) -> str:
    extra, module = EXTRAS.get(name, (None, None))
    if extra is None:
        return f"{url}: no client for {name}:// URLs is installed"
    return f"{url}: {name}:// URLs need the {module} package: pip install 'mzpeak-dask[{extra}]'"


def join(url: str, *names: str) -> str:
    """``url`` with ``names`` appended as path segments."""
    return "/".join([url.rstrip("/"), *(n.strip("/") for n in names)])


def basename(location: str | os.PathLike) -> str:
    """The last path segment of a path or URL."""
    if is_url(location):
        return str(location).rstrip("/").rsplit("/", 1)[-1]
    return os.path.basename(os.fspath(location).rstrip("/"))


__all__ = [
    "basename",
    "check_writable",
    "default_options",
    "filesystem",
    "is_url",
    "join",
    "local_path",
    "renewed_in_forked_child",
    "scheme",
    "set_default_options",
]
