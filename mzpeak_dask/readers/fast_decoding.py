"""Fast paths for the two steps every mzML array payload goes through: base64 by pybase64's
SIMD decoder, zlib by zlib-ng (the ``zlib-ng`` package, zlib's API).

On small.mzML's 99 zlib arrays, zlib-ng inflates in 9.4 ms what the standard library does in
13.3 ms; pybase64 decodes FeatureFinderMetaboIdent's payloads (1.7 kB each) five times as fast
as binascii. On a run of long profile spectra, the two standard-library calls took half of the
lean parse.

Each fast path answers only where its answer is the standard library's, and ``None``
otherwise; the caller then decodes with the standard library, which words every error:

* pybase64 with ``validate=True`` refuses some text that binascii's strict mode accepts (a
  final quantum with stray bits, some paddings): 20,755 of 300,000 mangled texts. It
  accepted none that binascii refuses, and where both accepted they gave the same bytes
  (``tests/readers/test_fast_decoding.py`` keeps comparing them).
* zlib-ng inflates at most one byte more than the array declares, as the standard library's
  path does, and answers when the stream ends, its checksum verified, at exactly the declared
  size. A stream that holds more or less, or is corrupt, goes to zlib, which says which.
  libdeflate, faster still, was tried and left: it inflated a corrupt stream zlib refuses
  (kept in the tests), and ISA-L 13 of 100,000 streams of mostly zeros with a bit or two
  flipped. zlib-ng, a fork of zlib's inflate, refused every stream zlib refused, in those and
  200,000 more, and in the tests'.

Without either package, both steps use the standard library alone.
"""

from __future__ import annotations

try:
    import pybase64 as _base64
except ImportError:  # pragma: no cover - a dependency; the standard library decodes without it
    _base64 = None
try:
    from zlib_ng import zlib_ng as _zlib
except ImportError:  # pragma: no cover - as above
    _zlib = None

__all__ = ["available", "base64_or_none", "inflated_or_none"]


def available() -> dict[str, bool]:
    """Which fast paths this process has."""
    return {"pybase64": _base64 is not None, "zlib-ng": _zlib is not None}


def base64_or_none(text: str) -> bytes | None:
    """``text`` (stripped) decoded as binascii's strict mode decodes it, or None where the fast
    decoder refuses it or is missing."""
    if _base64 is None:
        return None
    try:
        return _base64.b64decode(text, validate=True)
    except (ValueError, TypeError):  # binascii.Error is a ValueError
        return None


def inflated_or_none(raw: bytes, size: int) -> bytes | None:
    """The zlib stream ``raw`` inflated, when it is whole and inflates to exactly ``size`` (> 0)
    bytes; None otherwise, or without zlib-ng."""
    if _zlib is None or size <= 0:
        return None
    try:
        inflater = _zlib.decompressobj()
        out = inflater.decompress(raw, size + 1)
        if len(out) != size:
            return None
        out += inflater.flush()
    except (_zlib.error, ValueError, MemoryError):
        return None
    return out if inflater.eof and len(out) == size else None
