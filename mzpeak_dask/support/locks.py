"""Locks that live exactly as long as their process: ``fcntl.flock`` on a file.

The kernel drops such a lock when its owner's file descriptor closes, which happens however
the process ends (SIGKILL, out of memory, a wall-time limit), so a lock never outlives its
owner the way a pid file does. The file may stay after a killed owner; only the lock on it
counts. An owner may remove it as it lets go (:meth:`HeldLock.release` with ``remove``): a
process that opened the file just before sees, once it has the lock, that the path no longer
names its file, and starts again (:func:`try_lock`), so removing never lets two in. Worker
processes started later do not inherit the descriptor: Python opens it close-on-exec, and
the workers are spawned, never forked from this process.
Some cluster file systems refuse locks (Lustre mounted without ``flock``): see
:func:`unsupported`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import time
from pathlib import Path

REOPENS = 64  # a path found removed after it was locked: opened again at most this often


class HeldLock:
    """An exclusive lock this process holds on ``path`` until :meth:`release`."""

    def __init__(self, fd: int, path: Path):
        self.fd, self.path = fd, path

    def release(self, remove: bool = False) -> None:
        """Let go; with ``remove``, the file goes first (while still held)."""
        if self.fd >= 0:
            if remove:
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
            os.close(self.fd)  # closing the descriptor drops the lock
            self.fd = -1


def try_lock(path: Path, note: str | None = None, create: bool = True) -> HeldLock | None:
    """Lock ``path`` (created if missing, with ``create``) or return None when another
    holder has it. ``note`` (who holds it) replaces the file's content once it is held.
    With ``create``, the lock held is on the file the path names once it is held: a file
    its owner removed while this waited is let go and the path opened again."""
    for _ in range(REOPENS):
        fd = os.open(path, os.O_RDWR | (os.O_CREAT if create else 0), 0o644)
        if not _locked(fd):
            return None
        if not create or _still_named(fd, path):
            break
        os.close(fd)
    else:  # removed under this process each time: others keep taking and leaving it
        return None
    if note is not None:
        os.ftruncate(fd, 0)
        os.pwrite(fd, note.encode("utf-8", "backslashreplace"), 0)
    return HeldLock(fd, path)


def _still_named(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open at ``fd``."""
    try:
        here, there = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def lock_folder(path: Path) -> HeldLock | None:
    """Lock the folder ``path`` itself (no file is created in it), or return None when another
    holder has it. Raises OSError where the file system locks only files (NFS, which locks
    only what is open for writing)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    return HeldLock(fd, path) if _locked(fd) else None


def _locked(fd: int) -> bool:
    """Whether this process now holds the exclusive lock on ``fd`` (closed if not)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    except BaseException:
        os.close(fd)
        raise
    return True


def unsupported(exc: OSError) -> bool:
    """Whether ``exc`` says the file system does not do locks (rather than: locked)."""
    return exc.errno in {errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOLCK, errno.EINVAL}


def owner_note() -> str:
    """Who this process is, for a lock's note: ``pid N on HOST since TIME``."""
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return f"pid {os.getpid()} on {socket.gethostname()} since {since}"


def holder(path: Path) -> str:
    """The note the current holder of ``path`` left (empty if none)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


__all__ = ["HeldLock", "holder", "lock_folder", "owner_note", "try_lock", "unsupported"]
