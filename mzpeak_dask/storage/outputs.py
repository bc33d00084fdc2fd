"""Outputs written whole or not at all: into a new file beside the output, renamed into place;
or, for an object store's URL, into a local file then uploaded (the object appears whole).

The new file is made the way any new file is, with the mode the process's umask gives it.
``tempfile.mkstemp`` makes its file readable by its owner only (0600), and a file renamed into
place keeps its mode, so a table, picture or Zarr run written that way could be read neither
by the lab's other users nor by a web server serving the folder, unlike every other output.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import OutputError
from .uploads import upload_file
from .urls import check_writable, is_url


def new_file(folder: str | os.PathLike, prefix: str, suffix: str = "") -> Path:
    """A new, empty file ``folder/<prefix><random><suffix>`` (never one that was there), with
    the mode a new file gets under the umask. OSError if it cannot be made."""
    path = Path(folder) / f"{prefix}{secrets.token_hex(8)}{suffix}"
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    return path


def check_output(path: str | os.PathLike | None) -> None:
    """Refuse, before any work, an output that cannot be written: a folder that does not
    exist, a read-only URL (a web server)."""
    if path is None:
        return
    if is_url(str(path)):
        check_writable(str(path))
    elif not Path(path).absolute().parent.is_dir():
        raise OutputError(f"{path}: cannot write there (no folder {Path(path).parent})")


def atomic_write(path: str | os.PathLike, write: Callable[[Path], None]) -> None:
    """``write(temporary path)`` beside ``path``, then rename it into place (a URL: upload
    it); OutputError naming ``path`` if it cannot be written (nothing left behind)."""
    if is_url(str(path)):
        _uploaded(str(path), write)
        return
    target = Path(path)
    try:
        temporary = new_file(target.parent, f".{target.name}.", target.suffix)
    except OSError as exc:
        raise OutputError(f"{target}: cannot write there ({exc.strerror})") from None
    try:
        write(temporary)
        os.replace(temporary, target)
    except OSError as exc:
        raise OutputError(f"{target}: cannot write ({exc.strerror or exc})") from None
    finally:
        temporary.unlink(missing_ok=True)


def _uploaded(url: str, write: Callable[[Path], None]) -> None:
    """``write`` into a private local folder, then that file uploaded to ``url``."""
    folder = Path(tempfile.mkdtemp(prefix="mzpeak-dask-output-"))
    try:
        temporary = folder / f"output{Path(urlsplit(url).path).suffix}"
        write(temporary)
        upload_file(temporary, url)
    except OSError as exc:
        raise OutputError(f"{url}: cannot write ({exc.strerror or exc})") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def write_table(frame: Any, path: str | os.PathLike) -> None:
    """A pandas table written whole: Parquet for a ``.parquet`` or ``.pq`` suffix, else CSV."""
    if Path(path).suffix.lower() in (".parquet", ".pq"):
        atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    else:
        atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False))


__all__ = ["atomic_write", "check_output", "new_file", "write_table"]
