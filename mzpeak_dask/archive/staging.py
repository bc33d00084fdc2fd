"""Staging folders: where a conversion writes until its archive is renamed into place.

Each is a hidden folder ``.<output name>.<random>.tmp`` beside the output (same file system,
so the final rename is atomic, and cluster workers on shared storage can read and write it).
Its owner holds a lock on it for as long as it converts, so a later conversion or batch can
tell a folder left by a process that died (SIGKILL, a node lost, a wall-time limit) from one
in use right now, and sweep only the former. The lock is on the folder itself, taken while it
still has a name no sweep looks at (``.new``) and before it is renamed to its ``.tmp`` name, so
no folder is ever found unlocked while its owner lives; on a file system that locks only files
(NFS), on an ``owner.lock`` file inside it, as older versions always did. A folder locked on
itself costs its owner no file: creating, locking and removing it takes half the work. A
process killed in the microseconds between creating a folder and renaming it leaves a ``.new``
folder: a sweep removes it once it is older than a minute and nobody holds its lock.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from ..errors import OutputError
from ..support.locks import HeldLock, lock_folder, owner_note, try_lock, unsupported
from ..support.pathtext import is_utf8, text

log = logging.getLogger(__name__)
OWNER_LOCK = "owner.lock"
BORN = ".new"  # a staging folder's name until it is locked
# where folders cannot be locked on themselves, one without a lock file is being created by
# an older version (the lock follows within microseconds) or was left by one: older than
# this, it is dead
UNLOCKED_GRACE_SECONDS = 60.0
_OLD = object()
_NAME = re.compile(r"^\..+\.[a-z0-9_]{8}\.(tmp|new)$")  # tempfile.mkdtemp's random part
_TAIL = len("abcdefgh.tmp")  # of a staging folder's name: the random part and the suffix
_GLOBS = (".*.tmp", ".*" + BORN)
# this process's own folders, by path, until cleaned up (a sweep passes them by: a lock on
# NFS does not exclude its own process)
_LIVE: dict[str, Staging] = {}


def prefix_for(output: Path) -> str:
    return f".{text(output.name)}."


def folder_for(output: Path, name: str | None = None) -> Path:
    """Beside the output; but Arrow opens files by UTF-8 path only, so when the output's
    folder has a name that is not UTF-8, the nearest folder above it, on the same file
    system, whose path is (``name``: what errors call the output, default ``output``)."""
    parent = output.parent if str(output.parent) else Path(".")
    if is_utf8(str(parent)):
        return parent
    try:
        device = parent.stat().st_dev
    except OSError:
        return parent  # the missing folder is reported by the caller
    for folder in Path(os.path.abspath(parent)).parents:
        if is_utf8(str(folder)) and _usable(folder, device):
            return folder
    shown = text(name if name is not None else output)
    raise OutputError(f"{shown}: no writable folder with a UTF-8 path for temporary files")


def _usable(folder: Path, device: int) -> bool:
    try:
        same = folder.stat().st_dev == device
    except OSError:
        return False
    return same and os.access(folder, os.W_OK | os.X_OK)


class Folder:
    """A folder files are written in (a staging folder, or one inside it on a worker)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def file(self, name: str) -> Path:
        return self.path / name


class Staging(Folder):
    """A private scratch folder for one conversion, locked by this process until cleaned up;
    its errors call the output ``name`` (what the user named it; default ``output``)."""

    def __init__(self, output: Path, name: str | None = None):
        self.output = output
        shown = text(name if name is not None else output)
        folder = folder_for(output, name)  # (its own error, not one of mkdtemp's)
        try:
            born = Path(tempfile.mkdtemp(prefix=prefix_for(output), suffix=BORN, dir=folder))
        except OSError as exc:
            why = f"cannot create a temporary folder ({exc.strerror})"
            raise OutputError(f"{shown}: {why}") from None
        self._lock = _owner_lock(born, shown)
        self.path = _named(born, shown, self._lock)
        _LIVE[str(self.path)] = self
        self.cleaned = False

    def file(self, name: str) -> Path:
        return self.path / name

    def cleanup(self, attempts: int = 5) -> None:
        """Remove the folder. One that holds more than its lock is first renamed out of the
        way (:meth:`_retired`): a cancelled worker task may still be writing in it, by its
        old path, and once the name is gone it can no longer add files or folders there, so
        the walk that removes it ends (a batch stopped at its wall time left folders whose
        tasks kept writing in them). Should the removal still fail, try again."""
        self.cleaned = True
        path = self.path
        if not self._remove_empty():
            path = self._retired()
            for attempt in range(attempts):
                shutil.rmtree(path, ignore_errors=True)
                if not path.exists():
                    break
                time.sleep(0.05 * (attempt + 1))
        if self._lock is not None:
            with contextlib.suppress(OSError):
                self._lock.release()
        _LIVE.pop(str(self.path), None)
        _LIVE.pop(str(path), None)

    def _retired(self) -> Path:
        """The folder renamed to another staging name beside it (still locked, so no sweep
        takes it while this process removes it; a sweep does once this process is gone); its
        own path if it cannot be renamed."""
        for _ in range(8):
            retired = self.path.with_name(self.path.name[:-_TAIL] + secrets.token_hex(4) + ".tmp")
            if os.path.lexists(retired):
                continue
            try:
                os.rename(self.path, retired)
            except OSError:
                return self.path
            _LIVE[str(retired)] = self
            return retired
        return self.path

    def _remove_empty(self) -> bool:
        """Remove the folder if it holds nothing but its lock (a run finished on a worker,
        whose archive was renamed into place): two calls, not a walk of the tree."""
        try:
            if self._lock is None or self._lock.path != self.path:  # a lock file, if any
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.path / OWNER_LOCK)  # still held: the descriptor stays open
            os.rmdir(self.path)
        except OSError:
            return False
        return True


def _owner_lock(folder: Path, shown: str) -> HeldLock | None:
    """The lock on ``folder`` (new: nobody else has it), else on a lock file in it (errors
    call the output ``shown``)."""
    try:
        return lock_folder(folder)
    except OSError:  # a file system that locks only files
        pass
    try:
        return try_lock(folder / OWNER_LOCK, owner_note())
    except OSError as exc:
        if unsupported(exc):  # no locks on this file system: this folder is never swept
            log.debug("%s: no lock (%s)", folder, exc.strerror)
            return None
        shutil.rmtree(folder, ignore_errors=True)
        message = f"{shown}: cannot lock its temporary folder ({exc.strerror})"
        raise OutputError(message) from None


def _named(born: Path, shown: str, lock: HeldLock | None) -> Path:
    """``born`` renamed to its ``.tmp`` name, which a sweep looks at, once it is locked
    (errors call the output ``shown``)."""
    path = born.with_name(born.name[: -len(BORN)] + ".tmp")
    try:
        if os.path.lexists(path):  # the same random name: never replace another's folder
            raise FileExistsError(errno.EEXIST, "exists")
        os.rename(born, path)
    except OSError as exc:
        shutil.rmtree(born, ignore_errors=True)
        if lock is not None:
            lock.release()
        raise OutputError(f"{shown}: cannot create a temporary folder ({exc.strerror})") from None
    if lock is not None and lock.path == born:
        lock.path = path
    return path


def remove_held(outputs: Iterable[Path]) -> list[Path]:
    """Clean up the staging folders this process still holds for ``outputs``: those of runs
    that never ended, once the call converting them has stopped (an interrupt, SIGTERM at a
    wall-time limit). Each run removes its own as it ends or is aborted; this is the last
    word, so that a stopped batch leaves nothing beside its outputs whichever way it stopped.
    Returns the folders removed."""
    wanted = {os.path.abspath(o) for o in outputs}
    left = [s for s in dict.fromkeys(_LIVE.values()) if os.path.abspath(s.output) in wanted]
    for staging in left:
        log.debug("%s: removed as its call stopped (its run had not ended)", staging.path)
        staging.cleanup()
    return [s.path for s in left]


def sweep(folder: Path, output: Path | None = None, recursive: bool = False) -> list[Path]:
    """Remove the staging folders that dead processes left in ``folder`` (those for
    ``output`` only, if given; in every subfolder too with ``recursive``); returns them."""
    prefix = prefix_for(output) if output is not None else "."
    listing = folder.rglob if recursive else folder.glob
    candidates = [
        p
        for pattern in _GLOBS
        for p in listing(pattern)
        if _NAME.match(p.name) and p.name.startswith(prefix) and str(p) not in _LIVE
    ]
    return [p for p in candidates if _remove_if_dead(p)]


def sweep_outputs(outputs: Iterable[Path]) -> list[Path]:
    """:func:`sweep` for the staging folders of many ``outputs`` at once: each folder they go
    to is listed once (not once per output: a folder of thousands of outputs made that
    quadratic); returns the folders removed."""
    prefixes: dict[Path, set[str]] = {}
    for output in outputs:
        try:
            folder = folder_for(output)
        except OutputError:  # reported when its run starts
            continue
        prefixes.setdefault(folder, set()).add(prefix_for(output))
    removed = []
    for folder, wanted in prefixes.items():
        for pattern in _GLOBS:  # name: PREFIX + 8 random characters + ".tmp" (or ".new")
            for path in folder.glob(pattern):
                mine = _NAME.match(path.name) and path.name[:-_TAIL] in wanted
                if mine and str(path) not in _LIVE and _remove_if_dead(path):
                    removed.append(path)
    return removed


def _remove_if_dead(path: Path) -> bool:
    try:
        if not path.is_dir() or path.is_symlink():
            return False
        if path.name.endswith(BORN) and _young(path):  # its owner may be about to lock it
            return False
        lock = try_lock(path / OWNER_LOCK, create=False)
    except FileNotFoundError:  # no lock file: locked on the folder itself (see above)
        try:
            lock = lock_folder(path)
        except OSError:  # a file system that locks only files: a folder left by an older
            lock = _OLD  # version (being created, or dead), told by its age
    except OSError:
        return False
    if lock is _OLD:
        if _young(path):
            return False
        shutil.rmtree(path, ignore_errors=True)
        return True
    if lock is None:  # its owner is alive
        return False
    try:
        shutil.rmtree(path, ignore_errors=True)
    finally:
        lock.release()
    return True


def _young(path: Path) -> bool:
    """Changed less than :data:`UNLOCKED_GRACE_SECONDS` ago (or gone)."""
    try:
        return time.time() - path.stat().st_mtime < UNLOCKED_GRACE_SECONDS
    except OSError:
        return True


__all__ = [
    "OWNER_LOCK",
    "Folder",
    "Staging",
    "folder_for",
    "prefix_for",
    "remove_held",
    "sweep",
    "sweep_outputs",
]
