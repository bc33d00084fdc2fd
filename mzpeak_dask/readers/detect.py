"""Recognising an input by its content (magic bytes first, the suffix never decides), and
decompressing gzip/bzip2 inputs into a staging file that workers can seek in.

Each function reads ``path`` and words its errors with ``name``, what the user called the
input (default: ``path``): never the staged path a URL or a compressed input is read from."""

from __future__ import annotations

import bz2
import gzip
import os
import zlib
from pathlib import Path

from ..errors import InputError, OutputError, UnsupportedFormatError
from ..storage.inputs import object_head
from ..storage.urls import is_url
from .base import InputFormat

try:  # zlib-ng's gzip: inflates about 1.5 times as fast (a dependency; see decompress_to)
    from zlib_ng import gzip_ng as _fast_gzip
    from zlib_ng import zlib_ng as _fast_zlib
except ImportError:  # pragma: no cover
    _fast_gzip = _fast_zlib = None

GZIP_MAGIC = b"\x1f\x8b"
BZIP2_MAGIC = b"BZh"
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
_SNIFF_BYTES = 1 << 16
# Ceiling on a gzip/bzip2 input's decompressed size (README, "Bad input"): real .mzML.gz files
# expand 1.5-3 times, metadata-heavy mzML about 20 times; deflate alone can reach 1032 times.
# Small inputs may always expand to MIN_DECOMPRESSED_LIMIT.
MAX_DECOMPRESSION_RATIO = 100
MIN_DECOMPRESSED_LIMIT = 64 << 20
EXPECTED = "expected mzML, mzXML, MGF, mzMLb, a Thermo .raw file or a Bruker .d folder"


def _head(path: str, name: str, n: int = _SNIFF_BYTES) -> bytes:
    if is_url(path):  # an object in storage: its first bytes
        return object_head(path)[:n]
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except FileNotFoundError:
        raise InputError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{name}: is a directory, not an MS data file") from None
    except PermissionError:
        raise InputError(f"{name}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{name}: cannot read ({exc.strerror or exc})") from None


def compression_of(path: str, name: str | None = None) -> str | None:
    """``"gzip"``, ``"bzip2"`` or None, from the magic bytes."""
    head = _head(path, name or path, 4)
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(BZIP2_MAGIC):
        return "bzip2"
    return None


def _decompressed_head(path: str, name: str, compression: str) -> bytes:
    opener = gzip.open if compression == "gzip" else bz2.open
    try:
        with opener(path, "rb") as f:
            return f.read(_SNIFF_BYTES)
    except (OSError, EOFError, ValueError) as exc:
        raise InputError(f"{name}: corrupt {compression} data ({exc})") from None


def detect_format(
    path: str, formats: list[type[InputFormat]], name: str | None = None
) -> type[InputFormat]:
    """The input format of ``path`` (decompressing gzip/bzip2 on the fly to look inside)."""
    name = name or path
    if not is_url(path) and os.path.isdir(path):  # a vendor folder (Bruker .d) is one input
        for fmt in formats:
            if fmt.sniff_folder(path):
                return fmt
    head = _head(path, name)
    compression = compression_of(path, name)
    if compression is not None:
        head = _decompressed_head(path, name, compression)
    for fmt in formats:
        if fmt.sniff(head):
            if compression is not None and fmt.name == "mzMLb":
                break
            return fmt
    raise UnsupportedFormatError(f"{name}: not a recognised MS data file ({EXPECTED})")


def decompress_to(path: str, staging_dir: str, name: str | None = None) -> str:
    """Decompress a gzip/bzip2 input into ``staging_dir``; returns the new path. A staging
    file that cannot be written is told as the input's failure to decompress there (its
    path, in a temporary folder, is nothing the user named)."""
    name = name or path
    if not is_url(path) and os.path.isdir(path):  # a vendor folder: read where it lies
        return path
    compression = compression_of(path, name)
    if compression is None:
        return path
    opener = gzip.open if compression == "gzip" else bz2.open
    copy = Path(path).name
    for suffix in (".gz", ".bz2", ".gzip"):
        if copy.lower().endswith(suffix):
            copy = copy[: -len(suffix)]
    target = os.path.join(staging_dir, "input-" + copy)
    limit = decompressed_limit(os.path.getsize(path))
    whole = _fast_copy(path, target, limit) if compression == "gzip" else None
    try:
        if whole is None:
            with opener(path, "rb") as src, open(target, "wb") as dst:
                whole = _copy_at_most(src, dst, limit)
    except OSError as exc:
        if exc.errno is not None:  # the staging file could not be written
            why = f"cannot decompress into a temporary folder ({exc.strerror})"
            error = OutputError(f"{name}: {why}")
            error.errno = exc.errno  # a full disk is told as the output's (parallel.failures)
            raise error from None
        raise InputError(f"{name}: corrupt {compression} data ({exc})") from None
    except (EOFError, ValueError, zlib.error) as exc:
        raise InputError(f"{name}: corrupt {compression} data ({exc})") from None
    if not whole:
        os.unlink(target)
        raise InputError(
            f"{name}: {compression} data decompresses to more than {limit:,} bytes "
            f"({MAX_DECOMPRESSION_RATIO} times its size): refused as a decompression bomb"
        )
    return target


def _fast_copy(path: str, target: str, limit: int) -> bool | None:
    """:func:`_copy_at_most` from zlib-ng's gzip reader into ``target``; None where it fails
    (corrupt data, a header it reads differently, a write error) or is missing: the standard
    library then decompresses the input again and words the error. Where both succeed they
    give the same bytes (the stream's CRC-32 is checked)."""
    if _fast_gzip is None:
        return None
    try:
        with _fast_gzip.open(path, "rb") as src, open(target, "wb") as dst:
            return _copy_at_most(src, dst, limit)
    except (OSError, EOFError, ValueError, _fast_zlib.error):
        return None


def decompressed_limit(compressed_size: int) -> int:
    """The most a compressed input of ``compressed_size`` bytes may decompress to."""
    return max(MIN_DECOMPRESSED_LIMIT, MAX_DECOMPRESSION_RATIO * compressed_size)


def _copy_at_most(src, dst, limit: int) -> bool:  # noqa: ANN001 - binary file objects
    """Copy ``src`` to ``dst`` unless it holds more than ``limit`` bytes (then False)."""
    written = 0
    while block := src.read(min(1 << 20, limit + 1 - written)):
        written += len(block)
        if written > limit:
            return False
        dst.write(block)
    return True
