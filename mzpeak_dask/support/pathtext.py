"""Paths as text, for file names that are not UTF-8.

On POSIX a file name is bytes. Python hands an undecodable byte around as a lone surrogate
(``b"zz\\xff.mzML"`` is ``"zz\\udcff.mzML"``), which opens the file but cannot be written as
UTF-8: not to SQLite, JSON for other readers, Parquet, HTML, Arrow's file paths, or a strict
terminal. So such a path travels as a ``str`` internally and is written out in two forms:
:func:`text`, readable and valid UTF-8 (the byte shown as ``\\xff``), and :func:`uri`, a
``file:`` URI whose percent-escapes give back the exact bytes.

Both forms hide the password of a URL that carries one (``https://user:secret@host/...``
is shown ``https://user:***@host/...``, :func:`redact`): whatever is shown or stored of a
path or a URL, an error line, a progress line, a report, goes through them.
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


# a URL's userinfo (``user:password@``, ``token@``) up to its host: user, then password
_USERINFO = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/\s?#@:]*)(?P<password>:[^/\s?#]*)?@"
)
_CONTAINER_SCHEMES = ("az://", "abfs://", "abfss://")  # az's ``container@account``: no secret


def redact(value: object) -> str:
    """``value`` (a URL, or any text holding URLs) with each URL's password shown as ``***``
    (``https://user:***@host/x``); a lone user name that may be a token too (``***@``), but
    for Azure's ``abfs://container@account/...``, where it names the container."""

    def hidden(match: re.Match) -> str:
        scheme = match["scheme"]
        if match["password"] is not None:
            return f"{scheme}{match['user']}:***@"
        if scheme.lower() in _CONTAINER_SCHEMES:
            return match[0]
        return f"{scheme}***@"

    value = str(value)
    return _USERINFO.sub(hidden, value) if "@" in value else value


def text(value: object) -> str:
    """``value`` as valid UTF-8 text: undecodable bytes are shown as ``\\xNN``, a URL's
    password as ``***`` (:func:`redact`)."""
    value = redact(value)
    if is_utf8(value):
        return value
    try:
        raw = value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate that stands for no byte
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def uri(path: str | os.PathLike) -> str:
    """The exact path as a ``file:`` URI (``urllib.parse.unquote_to_bytes`` gives the bytes);
    a URL (``s3://bucket/key``) is its own URI, its password hidden (:func:`redact`)."""
    if isinstance(path, str) and re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", path):
        return redact(path)
    return Path(os.path.abspath(path)).as_uri()


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 chromatogram``, ``2 chromatograms``, ``12,000 row groups`` (``nouns``: the
    plural when it is not ``noun + "s"``)."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"


def human_size(count: int) -> str:
    """A byte count as people read it: ``512 bytes``, ``1.5 KiB``, ``12.3 MiB``, ``2.0 GiB``."""
    if count < 1024:
        return plural(count, "byte")
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        count /= 1024
        if count < 1024 or unit == "TiB":
            break
    return f"{count:,.1f} {unit}"


__all__ = ["human_size", "is_utf8", "plural", "redact", "text", "uri"]
