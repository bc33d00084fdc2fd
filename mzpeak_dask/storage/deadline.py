"""The deadline of every blocking call to an object store or web server.

An fsspec filesystem of an async client (s3fs, gcsfs, adlfs, HTTP) runs each call as a
coroutine on its event loop, and the calling thread waits for it without a limit of its own:
a request whose answer never comes (a connection that went dead under it, a store that
stopped answering) would keep the command waiting for ever. :func:`bounded` gives each
blocking method of such a filesystem the deadline :func:`deadline`: past it the coroutine is
cancelled on its own loop and the call fails with one line naming the URL
(:class:`StorageDeadlineError`). Every filesystem :func:`~.urls.filesystem` hands out is
bounded, and so is every file it opens (an upload's parts and its completion go through the
same methods).

The deadline is :data:`DEADLINE` seconds for one call (a request, or a whole transfer such as
the download of a compressed input), or the number of seconds in the environment variable
``MZPEAK_DASK_STORAGE_DEADLINE``, which worker processes inherit.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any

from ..errors import StorageError

DEADLINE = 600.0  # seconds one call to a store may take (a slow link's large download too)
ENVIRONMENT = "MZPEAK_DASK_STORAGE_DEADLINE"
_BOUNDED = "_mzpeak_dask_bounded"  # set on a filesystem whose methods carry the deadline


class StorageDeadlineError(StorageError, TimeoutError):
    """A store did not answer a call within the deadline."""


def deadline() -> float:
    """Seconds a blocking call to a store may take (:data:`DEADLINE` unless the environment
    variable ``MZPEAK_DASK_STORAGE_DEADLINE`` says otherwise)."""
    text = os.environ.get(ENVIRONMENT)
    if not text:
        return DEADLINE
    try:
        value = float(text)
    except ValueError:
        raise StorageError(f"{ENVIRONMENT}={text!r} is not a number of seconds") from None
    if not value > 0:
        raise StorageError(f"{ENVIRONMENT}={text!r} is not a positive number of seconds")
    return value


def bounded(fs: Any) -> Any:
    """``fs`` with each of its blocking methods that waits for a coroutine on the
    filesystem's loop (``cat_file``, ``info``, ``call_s3``...) replaced, on this instance,
    by one that gives up after :func:`deadline` (a filesystem that is not async is returned
    as it is)."""
    if not getattr(fs, "async_impl", False) or getattr(fs, "asynchronous", False):
        return fs
    if getattr(fs, _BOUNDED, False):
        return fs
    for name in _blocking_methods(fs):
        setattr(fs, name, _with_deadline(fs, name, getattr(fs, f"_{name}")))
    setattr(fs, _BOUNDED, True)
    return fs


def _blocking_methods(fs: Any) -> list[str]:
    """Names of ``fs``'s blocking wrappers of its coroutines (fsspec's ``sync_wrapper``,
    on the class or mirrored onto the instance), found without calling any property."""
    names = set()
    for owner in (vars(fs), *(vars(cls) for cls in type(fs).__mro__)):
        for name, value in owner.items():
            if name.startswith("_") or name in names:
                continue
            wrapped = getattr(value, "__wrapped__", None)
            if wrapped is not None and inspect.iscoroutinefunction(wrapped):
                if inspect.iscoroutinefunction(inspect.getattr_static(fs, f"_{name}", None)):
                    names.add(name)
    return sorted(names)


def _with_deadline(fs: Any, name: str, coroutine: Callable[..., Any]) -> Callable[..., Any]:
    from fsspec.asyn import sync
    from fsspec.exceptions import FSTimeoutError

    @functools.wraps(coroutine)
    def call(*args: Any, **kwargs: Any) -> Any:
        seconds = deadline()
        try:
            return sync(fs.loop, coroutine, *args, timeout=seconds, **kwargs)
        except FSTimeoutError:
            where = url_of(fs, *args, **kwargs)
            raise StorageDeadlineError(
                f"{where}: no answer from the store within {seconds:g} s ({name})"
            ) from None

    return call


def url_of(fs: Any, *args: Any, **kwargs: Any) -> str:
    """The URL a call of ``fs`` with these arguments is about (its path, or the Bucket and
    Key of an S3 request)."""
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    if "Bucket" in kwargs:  # an S3 request (``call_s3(method, Bucket=..., Key=...)``)
        path = "/".join(str(kwargs[k]) for k in ("Bucket", "Key") if kwargs.get(k))
    else:
        path = kwargs.get("path", args[0] if args else None)
    if isinstance(path, (list, tuple)):
        path = path[0] if path else None
    if not isinstance(path, str):
        return f"{protocol}://"
    return path if "://" in path else f"{protocol}://{path}"


__all__ = ["DEADLINE", "StorageDeadlineError", "bounded", "deadline", "url_of"]
