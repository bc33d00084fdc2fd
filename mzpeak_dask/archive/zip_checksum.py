"""ZIP members checksummed by zlib-ng's CRC-32: the same checksum, several times as fast.

A stored ZIP member costs a copy and its CRC-32, which :mod:`zipfile` takes, as it writes or
reads a member, through its module's ``crc32`` (the standard library's zlib). On this
project's machine that zlib took 16.8 ms for a 43 MB archive (small.mzML x30's), zlib-ng's
2.5 ms; the copy is most of what finishing a run costs besides. :func:`install` points that
name at zlib-ng's, for buffers under :data:`LARGEST` (the standard library's for larger ones
and without zlib-ng), which changes no byte: the tests hold both to the same values on any
bytes, from any starting value.
"""

from __future__ import annotations

import zipfile
import zlib

try:
    from zlib_ng import zlib_ng as _fast
except ImportError:  # pragma: no cover - zlib-ng is a dependency; without it, the stdlib's
    _fast = None

LARGEST = 1 << 30  # bytes in one call (the standard library's splits larger ones itself)


def crc32(data, value: int = 0) -> int:
    """The CRC-32 of ``data`` continuing from ``value``: :func:`zlib.crc32`'s value."""
    if _fast is not None and memoryview(data).nbytes < LARGEST:
        return _fast.crc32(data, value)
    return zlib.crc32(data, value)


def install() -> None:
    """:mod:`zipfile` checksums with :func:`crc32` (in this process, wherever it is used)."""
    zipfile.crc32 = crc32


__all__ = ["LARGEST", "crc32", "install"]
