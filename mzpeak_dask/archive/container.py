"""The two container forms of an mzPeak archive — an uncompressed ZIP or a directory — written
atomically: everything goes to a temporary name beside the output, which is renamed into place
only when the archive is complete, so a failed or interrupted run leaves nothing at OUTPUT.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import shutil
import stat
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from ..errors import OutputError, OutputExistsError
from ..storage.streaming import following
from ..support.real_paths import RealPaths
from . import zip_checksum
from .staging import Folder

zip_checksum.install()  # the same checksums, faster

ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # every member's date: the earliest a ZIP entry can hold
COPY_BLOCK = 1 << 20
ARCHIVE_FILE = "archive.mzpeak"  # names of the archive being written, in its folder
ARCHIVE_FOLDER = "archive"


def check_output(
    output: Path, overwrite: bool, inputs: Inputs | None = None, name: str | None = None
) -> None:
    """Fail early when the output is one of ``inputs`` (or a link to one, or a folder that
    holds one), exists (without ``overwrite``), or its folder is unwritable (errors call it
    ``name``, what the user named it; default ``output``)."""
    shown = output if name is None else name
    conflict = inputs.conflict(output) if inputs is not None else None
    if conflict:
        raise OutputError(f"{shown}: {conflict}; choose another output")
    if output.exists() and not overwrite:
        raise OutputExistsError(shown)
    parent = output.parent if str(output.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"{shown}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{shown}: the folder {parent} is not writable")


class Inputs:
    """The inputs that no output may overwrite, by file identity (device and inode: the same
    path, a symbolic link or a hard link) and by real path (for folders that hold one); and
    their sizes as they were listed, from the same ``stat``."""

    def __init__(self, paths: Iterable[Path]):
        self._ids: dict[tuple[int, int], Path] = {}
        self._sizes: dict[Path, int] = {}
        reals = []
        real = RealPaths()
        for path in paths:
            try:
                info = os.stat(path)
            except OSError:  # a missing input is reported as such
                continue
            self._ids[(info.st_dev, info.st_ino)] = path
            self._sizes[path] = info.st_size
            reals.append((real(path), str(path)))
        self._reals = sorted(reals)

    def size(self, path: Path) -> int | None:
        """The input's size when it was listed; None for one that could not be stat'ed."""
        return self._sizes.get(path)

    def conflict(self, output: Path) -> str | None:
        """Why writing ``output`` would destroy an input, if it would."""
        try:
            info = os.stat(output)
        except OSError:  # nothing there (or a dangling link): nothing to destroy
            return None
        same = self._ids.get((info.st_dev, info.st_ino))
        if same is not None:
            return f"is the input {same}"
        if stat.S_ISDIR(info.st_mode):
            folder = os.path.join(os.path.realpath(output), "")
            k = bisect.bisect_left(self._reals, (folder,))
            if k < len(self._reals) and self._reals[k][0].startswith(folder):
                return f"holds the input {self._reals[k][1]}"
        return None


class Container:
    """Members are added in order; the finished archive is left at :attr:`path` (``at``, or a
    file or folder in ``staging``) for :func:`put_in_place` to rename to ``output``."""

    def __init__(self, output: Path, staging: Folder, unpacked: bool, at: Path | None = None):
        self.output = output
        self.unpacked = unpacked
        self.members: list[tuple[str, int]] = []
        if unpacked:
            self._dir = at or staging.file(ARCHIVE_FOLDER)
            self._dir.mkdir()
            self._zip = None
        else:
            self._zip_path = at or staging.file(ARCHIVE_FILE)
            self._zip = zipfile.ZipFile(self._zip_path, "w", compression=zipfile.ZIP_STORED)

    @contextlib.contextmanager
    def stream(self, name: str) -> Iterator[IO[bytes]]:
        """A writable file object for member ``name`` (streamed straight into the ZIP)."""
        if self._zip is None:
            with open(self._dir / name, "wb") as f:
                yield f
            self.members.append((name, (self._dir / name).stat().st_size))
        else:
            with self._zip.open(_entry(name), "w", force_zip64=True) as f:
                yield f
            self.members.append((name, self._zip.getinfo(name).file_size))
            self._settled()

    def watched(self, sink: IO[bytes]) -> IO[bytes]:
        """``sink``, the first member being streamed into the ZIP, seen by the upload that
        follows this archive if one does: its bytes are sent as they come (its header, which
        the ZIP rewrites when it closes, goes last; see :mod:`..storage.streaming`)."""
        begins = self._zip is not None and not self.members
        upload = following(self.output) if begins else None
        return sink if upload is None else upload.watch(sink, self._zip.fp, self._zip_path)

    def add_file(self, name: str, path: Path) -> None:
        """Move the file at ``path`` into the archive as member ``name``."""
        if self._zip is None:
            os.replace(path, self._dir / name)
        else:
            with open(path, "rb") as src, self._zip.open(_entry(name), "w", force_zip64=True) as f:
                shutil.copyfileobj(src, f, COPY_BLOCK)
            path.unlink()
            self._settled()
        self.members.append((name, self._size(name)))

    def add_bytes(self, name: str, data: bytes) -> None:
        if self._zip is None:
            (self._dir / name).write_bytes(data)
        else:
            self._zip.writestr(_entry(name), data)
            self._settled()
        self.members.append((name, len(data)))

    def _settled(self) -> None:
        """A member was closed: the ZIP's bytes so far are final (only its central directory
        follows), and the upload following the archive, if one does, may send them."""
        upload = following(self.output)
        if upload is not None:
            self._zip.fp.flush()
            upload.settle(self._zip_path, self._zip.fp.tell())

    def _size(self, name: str) -> int:
        if self._zip is None:
            return (self._dir / name).stat().st_size
        return self._zip.getinfo(name).file_size

    @property
    def path(self) -> Path:
        """The archive being written (a ZIP file or a folder in the staging folder)."""
        return self._dir if self._zip is None else self._zip_path

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()

    def abort(self) -> None:
        if self._zip is not None:
            with contextlib.suppress(Exception):
                self._zip.close()


def _entry(name: str) -> zipfile.ZipInfo:
    """A stored member's ZIP entry, dated 1980-01-01 (the earliest DOS time) rather than when it
    was written, so that the same run converted twice gives the same bytes."""
    info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
    info.external_attr = 0o644 << 16
    return info


def put_in_place(archive: Path, output: Path, overwrite: bool, name: str | None = None) -> None:
    """Rename a finished ``archive`` to ``output`` (replacing it if allowed; errors call it
    ``name``, default ``output``)."""
    if output.exists():
        if not overwrite:
            shown = output if name is None else name
            raise OutputError(f"{shown}: appeared during the conversion; not replaced")
        _remove(output)
    os.replace(archive, output)


def archive_size(path: Path) -> int:
    """Bytes of an archive: a ZIP file's, or the sum of a folder's files."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
