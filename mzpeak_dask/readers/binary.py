"""Decoding one mzML ``binaryDataArray`` into a :class:`~mzpeak_dask.model.records.SignalArray`.

The mzML parser hands over each array's cvParams and base64 text undecoded; decoding happens
here, where a failure can be reported with the spectrum it belongs to. MS-Numpress payloads are
decoded with the project's own numpy decoder, which raises on corrupt input instead of aborting
the interpreter as pynumpress does (format doc section 5.5, toolchain notes section 6.5).
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..codecs import numpress
from ..format import vocabulary as V
from ..model.records import Param, SignalArray
from .base import spectrum_error
from .fast_decoding import base64_or_none, inflated_or_none

_ZLIB_NUMPRESS = {
    V.NUMPRESS_LINEAR_ZLIB: V.NUMPRESS_LINEAR,
    V.NUMPRESS_PIC_ZLIB: V.NUMPRESS_PIC,
    V.NUMPRESS_SLOF_ZLIB: V.NUMPRESS_SLOF,
}


class BinaryDecodeError(ValueError):
    """Raised for an array that cannot be decoded; the reader adds file and spectrum."""


@dataclass(slots=True)
class RawArray:
    """A binaryDataArray before decoding: its params and its payload (base64 text, or a
    reference into an external store such as an mzMLb HDF5 dataset)."""

    params: list[Param]
    payload: str | None = None
    external: tuple[str, int, int] | None = None  # (dataset, offset, length)
    data_processing_ref: str | None = None
    declared_length: int | None = None  # arrayLength, else the spectrum's defaultArrayLength


@dataclass(slots=True)
class ArrayTerms:
    """What a binaryDataArray's params say about it."""

    array_type: str | None = None
    name: str = ""
    unit: str | None = None
    data_type: str | None = None
    compressions: list[str] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)  # everything else, kept with the array


def classify(params: list[Param]) -> ArrayTerms:
    """Split a binaryDataArray's params into its type, name, unit, data type and compression."""
    terms = ArrayTerms()
    user_names: list[Param] = []
    for p in params:
        acc = p.accession
        if acc in V.ARRAY_TYPES and terms.array_type is None:
            terms.array_type, terms.unit = acc, p.unit
            if acc != V.NON_STANDARD_ARRAY:
                terms.name = p.name or ""
            elif p.value not in (None, ""):
                terms.name = str(p.value)
        elif acc in V.BINARY_DATA_TYPES and terms.data_type is None:
            terms.data_type = acc
        elif acc in V.COMPRESSIONS:
            terms.compressions.append(acc)
        elif acc is None and p.name and p.name.endswith(" array"):
            user_names.append(p)  # pyteomics' convention for naming non-standard arrays
        else:
            terms.params.append(p)
    if terms.array_type is None and user_names:
        terms.array_type = V.NON_STANDARD_ARRAY
    if terms.array_type == V.NON_STANDARD_ARRAY and not terms.name:
        terms.name = user_names.pop(0).name if user_names else "non-standard data array"
    terms.params.extend(user_names)
    return terms


# Ceilings on what one binaryDataArray may decode to, whatever it declares (README, "Bad
# input"): 2**25 values is 160 times the largest real spectrum seen (timsTOF, 205,921 points) and
# twice a 16M-point FT-ICR profile; ASCII arrays are bounded by bytes instead.
MAX_ARRAY_VALUES = 1 << 25
MAX_ARRAY_BYTES = MAX_ARRAY_VALUES * 8
# Deflate cannot expand its input more than 1032-fold (258-byte matches, 2-bit codes at best):
# a zlib payload too short to hold its declared length is refused before it is inflated.
ZLIB_MAX_RATIO = 1032
NUMPRESS_MAX_BYTES_PER_VALUE = 5  # linear/PIC: at most 4.5 bytes a value; SLOF: 2


def decode_bytes(
    raw: bytes, compressions: list[str], data_type: str, length: int | None = None
) -> np.ndarray:
    """Decompress ``raw`` per the mzML compression terms and view it as ``data_type``.

    ``length`` is the declared number of values (``arrayLength``, else the spectrum's
    ``defaultArrayLength``; for an ASCII array, the number of strings). The decoded array must
    hold exactly that many: an array of another length is refused, not stored beside arrays it
    does not match. Inflating stops one byte past what the declared length needs, so a corrupt
    or hostile payload cannot inflate to more than its spectrum says it holds."""
    dtype = np.dtype(np.uint8) if data_type == V.ASCII else V.DTYPE_OF.get(data_type)
    if dtype is None:
        raise BinaryDecodeError(f"unsupported binary data type {data_type}")
    _check_declared(length)
    values = _decode(raw, compressions, data_type, dtype, length)
    if length is not None and _count(values, data_type) != length:
        what = "strings" if data_type == V.ASCII else "values"
        raise BinaryDecodeError(
            f"the array holds {_count(values, data_type):,} {what}, its declared length "
            f"is {length:,}"
        )
    return values


def _check_declared(length: int | None) -> None:
    if length is not None and not 0 <= length <= MAX_ARRAY_VALUES:
        raise BinaryDecodeError(
            f"declared array length {length:,} is outside 0..{MAX_ARRAY_VALUES:,} "
            "(the most one array may hold)"
        )


def _count(values: np.ndarray, data_type: str) -> int:
    """Values, or for an ASCII array its NUL-terminated strings (the last may lack its NUL)."""
    if data_type != V.ASCII:
        return len(values)
    if not len(values):
        return 0
    return int(np.count_nonzero(values == 0)) + int(values[-1] != 0)


def _decode(
    raw: bytes, compressions: list[str], data_type: str, dtype: np.dtype, length: int | None
) -> np.ndarray:
    if not raw:  # an empty <binary/> is an empty array, whatever the compression says
        return np.zeros(0, dtype=dtype)
    numpress_codec = None
    for c in compressions:
        if c == V.NO_COMPRESSION:
            continue
        if c == V.ZLIB_COMPRESSION:
            limit = _inflate_limit(len(raw), length, dtype, data_type)
            exact = length is not None and data_type != V.ASCII  # the limit is the size
            fast = inflated_or_none(raw, limit) if exact else None
            raw = fast if fast is not None else _inflate(raw, limit)
        elif c in _ZLIB_NUMPRESS:
            raw = _inflate(raw, _numpress_limit(length))
            numpress_codec = _ZLIB_NUMPRESS[c]
        elif c in numpress.DECODERS:
            numpress_codec = c
        else:
            raise BinaryDecodeError(f"unsupported binary compression {c}")
    if numpress_codec is not None:
        values = numpress.DECODERS[numpress_codec](np.frombuffer(raw, dtype=np.uint8))
        return values if dtype == np.float64 else values.astype(dtype)
    if len(raw) % dtype.itemsize:
        raise BinaryDecodeError(
            f"{len(raw)} decoded bytes is not a whole number of {dtype.itemsize}-byte values"
        )
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype, copy=False)


def _inflate_limit(compressed: int, length: int | None, dtype: np.dtype, data_type: str) -> int:
    """The bytes a zlib payload may inflate to: exactly the declared values (ASCII strings and
    undeclared arrays: the ceiling). A declared length the payload cannot hold is refused."""
    if length is None or data_type == V.ASCII:
        return MAX_ARRAY_BYTES
    wanted = length * dtype.itemsize
    if wanted > ZLIB_MAX_RATIO * compressed + 64:
        raise BinaryDecodeError(
            f"corrupt zlib data: {compressed:,} bytes cannot hold the declared {length:,} values"
        )
    return wanted


def _numpress_limit(length: int | None) -> int:
    """Numpress bytes for ``length`` values, at most (a header and 4.5 bytes a value)."""
    if length is None:
        return MAX_ARRAY_BYTES
    return 16 + NUMPRESS_MAX_BYTES_PER_VALUE * length


def _inflate(raw: bytes, limit: int) -> bytes:
    """Inflate at most ``limit`` bytes; a stream that goes on, or stops before its end (a
    truncated or sync-flushed stream: no final block, no checksum), is corrupt."""
    try:
        inflater = zlib.decompressobj()
        out = inflater.decompress(raw, limit + 1)
        if len(out) > limit:
            raise BinaryDecodeError(
                f"zlib data inflates past {limit:,} bytes, more than its declared length holds"
            )
        out += inflater.flush()
    except zlib.error as exc:
        raise BinaryDecodeError(f"corrupt zlib data ({exc})") from None
    if not inflater.eof:
        raise BinaryDecodeError("truncated zlib data (the stream ends before its last block)")
    return out


_MAIN_AXES = (V.MZ_ARRAY, V.TIME_ARRAY, V.WAVELENGTH_ARRAY)


def check_paired(arrays: list[SignalArray]) -> None:
    """A spectrum's (or chromatogram's) main axis and its intensities hold as many values.

    Other arrays may declare a length of their own (isotopic envelopes, per-peak lists) and
    are kept as auxiliary arrays; a main axis and intensities of different lengths would
    lose points, whatever each declares."""
    axis = next((a for t in _MAIN_AXES for a in arrays if a.array_type == t), None)
    intensity = next((a for a in arrays if a.array_type == V.INTENSITY_ARRAY), None)
    if axis is not None and intensity is not None and len(axis.values) != len(intensity.values):
        raise BinaryDecodeError(
            f"the {axis.name} holds {len(axis.values):,} values, the intensity array "
            f"{len(intensity.values):,}"
        )


def b64decode(text: str | None) -> bytes:
    """A payload's bytes: by the fast decoder where it takes the text, else (and for every
    error) by the standard library's strict decoding, retried without inner whitespace."""
    if not text:
        return b""
    text = text.strip()
    fast = base64_or_none(text)
    if fast is not None:
        return fast
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        # whitespace inside the element is legal XML; retry without it before giving up
        try:
            return base64.b64decode("".join(text.split()), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise BinaryDecodeError(f"corrupt base64 data ({exc})") from None


def to_signal_array(
    raw: RawArray, fetch_external: Callable[[str, int, int], np.ndarray] | None = None
) -> SignalArray:
    """Decode one raw array. ``fetch_external`` reads mzMLb HDF5 slices."""
    terms = classify(raw.params)
    if terms.array_type is None:
        raise BinaryDecodeError("binaryDataArray without an array type term")
    if raw.external is not None:
        if fetch_external is None:
            raise BinaryDecodeError("array refers to external data, but the input has none")
        length = raw.external[2]  # an mzMLb array declares its own length (pwiz writes
        _check_declared(length)  # defaultArrayLength="0" on chromatograms beside it)
        values = fetch_external(*raw.external)
        if len(values) != length:
            raise BinaryDecodeError(
                f"the external array holds {len(values):,} values, its declared length is "
                f"{length:,}"
            )
        wanted = V.DTYPE_OF.get(terms.data_type or "")
        if wanted is not None and values.dtype != wanted:
            values = values.astype(wanted)
    else:
        data_type = terms.data_type or V.FLOAT64
        values = decode_bytes(
            b64decode(raw.payload), terms.compressions, data_type, raw.declared_length
        )
    return SignalArray(
        terms.array_type, terms.name, terms.unit, values, terms.params, raw.data_processing_ref
    )


FetchExternal = Callable[[str, int, int], np.ndarray] | None


def decode_arrays(
    raws: list[RawArray], default_length: int | None, name: str, item: str, fetch: FetchExternal
) -> list[SignalArray]:
    """Decode the raw arrays of one spectrum or chromatogram (``item``, as errors name it).

    An array's own arrayLength, else the spectrum's defaultArrayLength: every array must hold
    exactly its declared length (arrays of another length declare their own)."""
    out = []
    for raw in raws:
        if raw.declared_length is None and default_length is not None:
            raw.declared_length = default_length
        try:
            out.append(to_signal_array(raw, fetch))
        except BinaryDecodeError as exc:
            raise spectrum_error(name, item, str(exc)) from None
        except (ValueError, OverflowError) as exc:  # numpress and numpy conversion errors
            raise spectrum_error(name, item, f"cannot decode binary data ({exc})") from None
    try:
        check_paired(out)
    except BinaryDecodeError as exc:
        raise spectrum_error(name, item, str(exc)) from None
    return out
