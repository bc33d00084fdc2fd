"""Paths as text, for file names that are not UTF-8.

On POSIX a file name is bytes. Python hands an undecodable byte around as a lone surrogate
(``b"zz\\xff.mzML"`` is ``"zz\\udcff.mzML"``), which opens the file but cannot be written as
UTF-8: not to SQLite, JSON for other readers, Parquet, HTML, Arrow's file paths, or a strict
terminal. So such a path travels as a ``str`` internally and is written out in two forms:
:func:`text`, readable and valid UTF-8 (the byte shown as ``\\xff``), and :func:`uri`, a
``file:`` URI whose percent-escapes give back the exact bytes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path


def is_utf8(value: str) -> bool:
    """Whether ``value`` holds no undecodable bytes (it encodes as UTF-8)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text(value: object) -> str:
    """``value`` as valid UTF-8 text: undecodable bytes are shown as ``\\xNN``."""
    value = str(value)
    if is_utf8(value):
        return value
    try:
        raw = value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def uri(path: str | os.PathLike) -> str:
    """The exact path as a ``file:`` URI (``urllib.parse.unquote_to_bytes`` gives the bytes);
    a URL (``s3://bucket/key``) is its own URI."""
    if isinstance(path, str) and re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", path):
        return path
    return Path(os.path.abspath(path)).as_uri()


__all__ = ["is_utf8", "text", "uri"]
