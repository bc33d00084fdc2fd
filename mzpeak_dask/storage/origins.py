"""Where a staged input came from.

An input URL is converted from a local copy (see :mod:`mzpeak_dask.transfer.staged`); the
archive must still name the object it was converted from as its source file's location, not the
staging folder, which is gone once the conversion ends. The download leaves the URL in a small
file beside the copy (``NAME.mzpeak-dask-origin``, never taken for an input: no MS data
suffix), and whoever writes the archive's file-level metadata, on the coordinator or on a
worker, reads it back from the copy's path.
"""

from __future__ import annotations

import os
from pathlib import Path

SUFFIX = ".mzpeak-dask-origin"


def _marker(copy: Path) -> Path:
    return copy.with_name(copy.name + SUFFIX)


def mark_origin(copy: Path, url: str) -> None:
    """Record that ``copy`` was fetched from ``url`` (readable by its owner only: the URL may
    hold a password, which the workers reading the object need)."""
    marker = _marker(copy)
    fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(url)


def origin_of(copy: Path) -> str | None:
    """The URL ``copy`` was fetched from, or None for a file that was not staged."""
    try:
        return _marker(copy).read_text(encoding="utf-8").strip() or None
    except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
        return None


def origin_folder(url: str) -> str:
    """The location (the folder, as the source file list records it) of the object at ``url``."""
    return url.rstrip("/").rsplit("/", 1)[0]


__all__ = ["SUFFIX", "mark_origin", "origin_folder", "origin_of"]
