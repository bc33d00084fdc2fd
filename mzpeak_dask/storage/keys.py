"""Names from outside (object keys, the URLs of a manifest) as local paths and output keys.

A key is chosen by whoever can write to the bucket, not by the user running the batch. It
becomes a path in a staging tree, or part of an output key, only through
:func:`safe_relative`, which accepts a relative name made of plain segments and refuses
anything else: ``..`` and ``.`` segments, an absolute name, an empty segment (``a//b``),
control characters (NUL included), a segment longer than a file name may be, a name longer
than an object key may be. Joined to a folder or a prefix, an accepted name stays under it.
"""

from __future__ import annotations

import unicodedata
from pathlib import PurePosixPath

from ..errors import InputError

MAX_SEGMENT = 255  # bytes: the longest file name of common file systems (NAME_MAX)
MAX_NAME = 1024  # bytes: the longest S3 key


def shown(name: str) -> str:
    """``name`` on one line: characters that are not printable (control characters, bytes
    that are not UTF-8) as Python escapes (``\\x00``, ``\\n``, ``\\udcff``)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def safe_relative(name: str, where: str | None = None) -> PurePosixPath:
    """``name`` (``/``-separated) as a relative path that stays inside whatever it is joined
    to, or :class:`InputError` naming ``where`` (the URL the name came from; else the name)."""

    def refuse(why: str) -> InputError:
        return InputError(f"{shown(where if where is not None else name)}: {why}; not converted")

    try:
        size = len(name.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        raise refuse("its name is not valid text") from None
    if not name:
        raise refuse("empty name")
    if size > MAX_NAME:
        raise refuse(f"name longer than {MAX_NAME} bytes")
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise refuse("control character in its name")
    if name.startswith("/"):
        raise refuse("absolute name")
    segments = name.split("/")
    for segment in segments:
        if segment in ("", ".", ".."):
            why = "empty segment" if not segment else f"'{segment}' segment"
            raise refuse(f"{why} in its name (it would not stay in its folder)")
        if len(segment.encode("utf-8", "surrogateescape")) > MAX_SEGMENT:
            raise refuse(f"a segment of its name is longer than {MAX_SEGMENT} bytes")
    return PurePosixPath(*segments)


__all__ = ["MAX_NAME", "MAX_SEGMENT", "safe_relative", "shown"]
