"""Where a Zarr run group lives, as one string zarr opens: a local folder (read and written
chunk object by chunk object, the fast path), a URL of a remote store (``s3://bucket/runs.zarr``,
through zarr's ``FsspecStore``), or one run in a single file (``RUN.zarr.zip``, a ZIP store that
zarr-python reads; addressed as fsspec's chained URL ``zip://INNER::file:///abs/RUN.zarr.zip``,
or ``zip://INNER::s3://bucket/RUN.zarr.zip`` for one in a bucket).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..storage.urls import default_options, is_url, local_path

ZIP_SUFFIX = ".zarr.zip"


def is_single_file(source: str | os.PathLike) -> bool:
    """Whether ``source`` names a single-file run (a ZIP store)."""
    return str(source).rstrip("/").endswith(".zip")


def zip_location(source: str | os.PathLike) -> str:
    """The root of the single-file run ``source`` (a path or a URL) as a chained URL."""
    source = local_path(source)
    outer = str(source) if is_url(source) else Path(source).resolve().as_uri()
    return f"zip://::{outer}"


def child(location: str, name: str) -> str:
    """The location of ``name`` inside ``location``."""
    if "::" in location:
        head, tail = location.split("::", 1)
        inner = head + name if head.endswith("://") else f"{head.rstrip('/')}/{name}"
        return f"{inner}::{tail}"
    if is_url(location):
        return f"{location.rstrip('/')}/{name}"
    return os.path.join(location, name)


def run_name(location: str) -> str:
    """A run's name: its group's name, or its file's name without ``.zarr.zip``."""
    if "::" in location:
        head, tail = location.split("::", 1)
        inner = head.split("://", 1)[1].strip("/")
        if inner:
            return inner.rsplit("/", 1)[-1]
        return tail.rstrip("/").rsplit("/", 1)[-1].removesuffix(ZIP_SUFFIX).removesuffix(".zip")
    return location.rstrip("/").rsplit("/", 1)[-1]


def describe(location: str | os.PathLike) -> str:
    """``location`` as a user names it: a member of a single-file run as ``FILE: MEMBER``."""
    location = str(location)
    if "::" not in location:
        return location
    head, tail = location.split("::", 1)
    inner = head.split("://", 1)[-1].strip("/")
    outer = str(local_path(tail))
    return f"{outer}: {inner}" if inner else outer


def open_options(location: str | os.PathLike) -> dict[str, Any]:
    """Keyword arguments for zarr's ``open_*`` of ``location``: the storage options of a
    remote store (a chained URL takes its store's credentials from the environment)."""
    location = str(location)
    if is_url(location) and "::" not in location:
        return {"storage_options": default_options()}
    return {}


__all__ = [
    "ZIP_SUFFIX",
    "child",
    "describe",
    "is_single_file",
    "open_options",
    "run_name",
    "zip_location",
]
