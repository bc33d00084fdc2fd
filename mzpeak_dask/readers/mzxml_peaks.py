"""Decoding one mzXML ``<peaks>`` payload: base64 of (optionally zlib-compressed) m/z and
intensity pairs, 32- or 64-bit floats in network (big-endian) byte order.

The payload is bounded by what its scan declares before anything is inflated: ``peaksCount``
pairs of ``precision`` bits, at most :data:`~.binary.MAX_ARRAY_VALUES` peaks, and the payload
must hold exactly that many. base64 and zlib go through the same fast paths (and the same
standard-library fallbacks, which word every error) as mzML's arrays (:mod:`.binary`).

The arrays are those pyteomics gives: the precision's float type in native byte order, and an
empty ``float64`` array for a ``<peaks>`` element without text.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .binary import (
    MAX_ARRAY_VALUES,
    ZLIB_MAX_RATIO,
    BinaryDecodeError,
    _inflate,
    b64decode,
)
from .fast_decoding import inflated_or_none

_PRECISION = {"32": 4, "64": 8}
_BYTE_ORDER = {"network": ">", "big": ">", "little": "<"}
_PAIRS = ("m/z-int",)  # pairOrder (mzXML 2 and 3) or contentType (3.x): what pairs hold
_COMPRESSION = {None: False, "none": False, "": False, "zlib": True}


def _attribute(attrs: Mapping[str, str], key: str, allowed: Mapping | tuple) -> str | None:
    value = attrs.get(key)
    if value is not None and value not in allowed:
        raise BinaryDecodeError(f"unsupported peaks {key}={value!r}")
    return value


def _declared_bytes(declared: int | None, pair: int) -> int | None:
    if declared is None:
        return None
    if not 0 <= declared <= MAX_ARRAY_VALUES:
        raise BinaryDecodeError(
            f"declared peaksCount {declared:,} is outside 0..{MAX_ARRAY_VALUES:,} "
            "(the most one scan may hold)"
        )
    return declared * pair


def _inflated(raw: bytes, wanted: int | None) -> bytes:
    """``raw`` inflated to at most the declared size (the ceiling when nothing is declared)."""
    if wanted is None:
        return _inflate(raw, MAX_ARRAY_VALUES * 16)
    if wanted > ZLIB_MAX_RATIO * len(raw) + 64:
        raise BinaryDecodeError(
            f"corrupt zlib data: {len(raw):,} bytes cannot hold the declared {wanted:,} bytes"
        )
    fast = inflated_or_none(raw, wanted)
    return fast if fast is not None else _inflate(raw, wanted)


def decode_peaks(
    text: str | None, attrs: Mapping[str, str], declared: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """The m/z and intensity arrays of a ``<peaks>`` element (its stripped text and its
    attributes) of a scan that declares ``declared`` peaks (``peaksCount``, or None)."""
    precision = attrs.get("precision")
    if precision not in _PRECISION:
        raise BinaryDecodeError(f"unsupported peaks precision={precision!r} (32 or 64)")
    order = _BYTE_ORDER.get(str(_attribute(attrs, "byteOrder", _BYTE_ORDER)), ">")
    _attribute(attrs, "pairOrder", _PAIRS)
    _attribute(attrs, "contentType", _PAIRS)
    compressed = _COMPRESSION[_attribute(attrs, "compressionType", _COMPRESSION)]
    size = _PRECISION[precision]
    wanted = _declared_bytes(declared, 2 * size)
    if not text:
        if declared:
            raise BinaryDecodeError(f"peaksCount is {declared:,}, the peaks element is empty")
        return np.zeros(0), np.zeros(0)
    raw = b64decode(text)
    if compressed:
        stated = attrs.get("compressedLen")
        if stated not in (None, "", "0") and stated.strip() != str(len(raw)):
            raise BinaryDecodeError(
                f"compressedLen is {stated}, the payload holds {len(raw):,} bytes"
            )
        raw = _inflated(raw, wanted)
    if len(raw) % (2 * size):
        raise BinaryDecodeError(
            f"{len(raw):,} decoded bytes is not a whole number of {2 * size}-byte peaks"
        )
    count = len(raw) // (2 * size)
    if declared is None and count > MAX_ARRAY_VALUES:
        raise BinaryDecodeError(
            f"the payload holds {count:,} peaks, more than {MAX_ARRAY_VALUES:,} (the most one "
            "scan may hold)"
        )
    if declared is not None and count != declared:
        raise BinaryDecodeError(f"peaksCount is {declared:,}, the payload holds {count:,} peaks")
    pairs = np.frombuffer(raw, dtype=np.dtype(f"{order}f{size}")).reshape(-1, 2)
    native = np.dtype(f"=f{size}")
    return pairs[:, 0].astype(native), pairs[:, 1].astype(native)
