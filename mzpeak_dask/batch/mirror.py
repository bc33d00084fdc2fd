"""The staging tree of a batch of URLs: each input as a local path under the tree, named after
its key below the source prefix (or its URL's host and path, for a manifest), which the local
batch then converts as any folder tree.

A key becomes a local path only through :func:`..storage.keys.safe_relative`: no key can name a
path outside the tree. An input read by ranges where it lies is staged as a note of its URL,
a compressed one is downloaded (:mod:`..staged`). An input that cannot be staged (a key that
would leave the tree, two keys staged under one name, an object that is not MS data, a failed
download) is a failed row of the batch, naming its URL; the others go on.
"""

from __future__ import annotations

import time
from pathlib import Path, PurePosixPath
from typing import Any

from ..convert import archive_names
from ..errors import InputError, MzPeakDaskError
from ..storage.keys import safe_relative, shown
from ..storage.origins import SUFFIX, mark_origin
from ..storage.urls import is_url, join
from ..transfer.staged import by_ranges, download
from .state import FAILED


def stage(
    todo: list[tuple[str, str, str | None, int | None]], mirror: Path, output: str
) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """Stage the inputs of ``todo`` (``(url, name, ETag, size)``; a size of None: found
    missing when listed, failed without another request) under ``mirror``: the URL of each
    staged path (resolved), and the failed records of those that could not be."""
    urls: dict[str, str] = {}
    failed = []
    files: set[Path] = set()  # the staged paths
    folders: set[Path] = set()  # the folders holding them
    for url, name, _, size in todo:
        relative = None
        try:
            if not is_url(url):  # a line of a manifest
                raise InputError(f"{shown(url)}: not a URL (a batch into storage lists URLs)")
            relative = safe_relative(name, url)
            if hidden(relative.as_posix()):  # the local batch would leave it out, silently
                raise InputError(f"{shown(url)}: in a folder whose name starts with '.'")
            if size is None:
                raise InputError(f"{shown(url)}: no such object")
            target = mirror.joinpath(*relative.parts)
            if target in files or target in folders or files.intersection(target.parents):
                raise InputError(f"{shown(url)}: staged under the name of another input")
            files.add(target)
            folders.update(target.parents)
            _stage(url, target)
        except (MzPeakDaskError, OSError) as exc:
            failed.append(_failed(url, relative, output, exc, size))
            continue
        urls[str(target.resolve())] = urls[str(target)] = url  # (progress shows either)
    return urls, failed


def hidden(name: str) -> bool:
    """Whether ``name`` (``/``-separated) lies in a folder whose name starts with '.', which a
    batch does not enter (as locally: :func:`.sources.discover`); ``..`` is no such folder."""
    return any(p.startswith(".") and p not in (".", "..") for p in name.split("/")[:-1])


def _stage(url: str, target: Path) -> None:
    """``target`` as the note of ``url`` or its downloaded copy; nothing left if that fails
    (the local batch would take a partial copy for an input)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if by_ranges(url):  # read where it lies, by the workers' ranged reads: only noted
            mark_origin(target, url)
        else:  # compressed: streamed into the staging tree
            download(url, target)
    except BaseException:
        for path in (target, target.with_name(target.name + SUFFIX)):
            if path.is_file():
                path.unlink()
        raise


def _failed(
    url: str, relative: PurePosixPath | None, output: str, exc: BaseException, size: int
) -> dict[str, Any]:
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if not isinstance(exc, MzPeakDaskError):  # an OSError naming the staged path
        message = f"{shown(url)}: cannot be staged ({getattr(exc, 'strerror', None) or message})"
    return {
        "input": url,
        "output": _archive_key(output, relative),
        "status": FAILED,
        "error": message,
        "input_sha256": None,
        "input_bytes": size,
        "attempts": 0,
        "finished_at": time.time(),
        "warnings": [],
    }


def _archive_key(output: str, relative: PurePosixPath | None) -> str:
    """The key the input's archive would have had: the output prefix for a name refused."""
    if relative is None:
        return output
    name = archive_names([Path(*relative.parts)])[0]
    return join(output, (relative.parent / name).as_posix())


__all__ = ["hidden", "stage"]
