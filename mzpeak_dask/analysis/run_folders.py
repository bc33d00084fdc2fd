"""Folders and bucket prefixes of runs: what a batch's output holds, given to the analysis as
one source that stands for every run under it.

A local folder, or an object store's prefix written with a trailing ``/``
(``s3://bucket/converted/``), that is not itself a run source (a Zarr store or run group, an
unpacked archive) is replaced by the runs found under it, in the order of their paths:
``*.mzpeak`` archives, ``*.zarr.zip`` runs, and the Zarr stores and unpacked archives among
its folders (not searched further): a folder holding a store's or an archive's marker file, or
named ``*.mzpeak`` or ``*.zarr`` (a damaged one is then named when it cannot be opened, not
passed over). Names in a hidden folder (a batch's staging) are left out. Keys listed from a
store become URLs under its prefix, never local paths. The commands that read archives only
(``info``, ``validate``) take the archives among them (:func:`expand_archives`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InputError, StorageError
from ..format.vocabulary import INDEX_MEMBER
from ..storage.failures import cause
from ..storage.urls import LISTED, filesystem, is_url, join, local_path, scheme
from .source import Run

MARKERS = ("zarr.json", INDEX_MEMBER)  # a folder holding one is a run source itself
RUN_FILES = (".mzpeak", ".zarr.zip")
RUN_FOLDERS = (".mzpeak", ".zarr")  # an unpacked archive, a Zarr store


def expand_folders(sources: list[Any]) -> list[Any]:
    """``sources`` with each folder or prefix of runs replaced by the runs under it; one
    without any raises :class:`InputError` naming it."""
    return _expanded(sources, lambda run: True, "mzPeak archive or Zarr store")


def expand_archives(sources: list[str]) -> list[str]:
    """``sources`` with each folder or prefix of runs replaced by the mzPeak archives under it
    (its Zarr runs left out); one without any raises :class:`InputError` naming it."""
    return _expanded(sources, _archive, "mzPeak archive")


def _expanded(sources: list[Any], wanted: Callable[[str], bool], what: str) -> list[Any]:
    out: list[Any] = []
    for source in sources:
        found = _runs_of(source)
        if found is None:
            out.append(source)
            continue
        runs = [run for run in found if wanted(run)]
        if not runs:
            raise InputError(f"{source}: no {what} in it (nor under it)")
        out += runs
    return out


def _archive(run: str) -> bool:
    """Whether a run found under a folder or prefix is an mzPeak archive, not a Zarr run."""
    if run.endswith(".mzpeak"):
        return True
    if run.endswith((".zarr", ".zarr.zip")):
        return False
    if is_url(run):  # a folder holding a marker file: which one (one request)
        fs, path = filesystem(run)
        return bool(fs.exists(f"{path.rstrip('/')}/{INDEX_MEMBER}"))
    return (Path(run) / INDEX_MEMBER).exists()


def _runs_of(source: Any) -> list[str] | None:
    """The runs under ``source``, or None when it is a source of its own."""
    if isinstance(source, Run):
        return None
    if is_url(source):
        text = str(source)
        if scheme(text) not in LISTED or not text.endswith("/"):
            return None
        return _listed(text)
    path = Path(local_path(source))
    if not path.is_dir() or _marked(path):
        return None
    relative = []
    for folder, dirs, files in os.walk(path):
        here = Path(folder)
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        runs = [d for d in dirs if d.endswith(RUN_FOLDERS) or _marked(here / d)]
        dirs[:] = [d for d in dirs if d not in runs]
        named = [f for f in files if f.endswith(RUN_FILES) and not f.startswith(".")]
        relative += [(here / name).relative_to(path).as_posix() for name in runs + named]
    return [str(path / name) for name in sorted(relative)]


def _marked(path: Path) -> bool:
    return any((path / marker).exists() for marker in MARKERS)


def _listed(prefix: str) -> list[str] | None:
    """The runs under an object store's prefix, from one listing of its keys (None when the
    prefix is a store or an unpacked archive itself: one request for each marker)."""
    fs, path = filesystem(prefix)
    base = path.rstrip("/")
    try:
        if any(fs.exists(f"{base}/{marker}") for marker in MARKERS):
            return None
        keys = fs.find(base)
    except StorageError:  # the store gave no answer in time (already one line)
        raise
    except Exception as exc:  # every client has its own errors; a user needs one line
        reason = cause(exc, "bucket does not exist")
        raise InputError(f"{prefix}: cannot list ({reason})") from None
    names = [k[len(base) :].lstrip("/") for k in keys]
    names = [n for n in names if not any(p.startswith(".") for p in n.split("/"))]
    found = set()
    for name in names:
        parts = name.split("/")
        if len(parts) > 1 and parts[-1] in MARKERS:
            found.add("/".join(parts[:-1]))
        named = [k for k, part in enumerate(parts[:-1]) if part.endswith(RUN_FOLDERS)]
        if named:
            found.add("/".join(parts[: named[0] + 1]))
    runs: set[str] = set()
    for folder in sorted(found):  # a folder before those inside it (a store's run groups)
        if folder and not _inside(folder, runs):
            runs.add(folder)
    files = [n for n in names if n.endswith(RUN_FILES) and not _inside(n, runs)]
    return [join(prefix, name) for name in sorted([*runs, *files])]


def _inside(name: str, folders: set[str]) -> bool:
    """Whether key ``name`` lies inside one of ``folders`` (its own parents looked up: a
    listing of many stores holds a marker for every group and array of each)."""
    parts = name.split("/")
    return any("/".join(parts[:k]) in folders for k in range(1, len(parts)))


__all__ = ["expand_archives", "expand_folders"]
