"""MS-Numpress codecs (linear ``MS:1002312``, pic ``MS:1002313``, slof ``MS:1002314``) in numpy.

Byte-identical to the C++ reference ``MSNumpress.cpp`` as shipped in pynumpress 0.1.5 (whose
encoders leak their output and which aborts the interpreter wherever the C++ throws); malformed
input raises :class:`NumpressDecodeError`, unencodable values :class:`NumpressEncodeError`.

Byte layouts (the fixed point ``fp`` is an IEEE double stored **big-endian**, ints little-endian):

* linear: ``fp`` (8 bytes); ``int(x[0] * fp + 0.5)`` and ``int(x[1] * fp + 0.5)`` as uint32 (4 + 4
  bytes); then, for i >= 2, ``int[i] - (2 * int[i-1] - int[i-2])`` as half-byte ints. 8 bytes
  hold no value, 12 bytes one value.
* slof: ``fp`` (8 bytes), then ``uint16(log(x + 1) * fp + 0.5)`` per value (2 bytes each).
* pic: half-byte ints ``uint32(x + 0.5)``, nothing else.

A half-byte int is a head nibble ``h`` followed by ``k`` data nibbles, least significant first,
high nibble of each byte first: ``h <= 8`` means the top ``h`` nibbles are 0 and ``k = 8 - h``;
``h >= 9`` means the top ``h - 8`` nibbles are 0xF and ``k = 16 - h``. An odd nibble count ends in a
0 nibble. To find the heads without a loop over values, streams up to 16 KiB use pointer doubling;
longer ones run a 9-state automaton (nibbles left before the next head) over 4-nibble units, one
lane per block of units. A block's 9 possible entry states almost always meet within 64 units,
which makes blocks independent; blocks where they do not get their state maps prefix-composed.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..errors import NumpressDecodeError, NumpressEncodeError
from ..format import vocabulary as V

__all__ = [
    "DECODERS",
    "ENCODERS",
    "NumpressEncodeError",
    "decode_linear",
    "decode_pic",
    "decode_slof",
    "encode_linear",
    "encode_pic",
    "encode_slof",
    "optimal_linear_fixed_point",
    "optimal_slof_fixed_point",
]


_HEAD_DATA = np.array([8, 7, 6, 5, 4, 3, 2, 1, 0, 7, 6, 5, 4, 3, 2, 1], dtype=np.uint8)
_LOW_MASK = ((np.uint64(1) << (4 * _HEAD_DATA.astype(np.uint64))) - 1).astype(np.uint32)
_FILL = np.where(np.arange(16) > 8, ~_LOW_MASK, 0).astype(np.uint32)
_TWO63 = 2.0**63
_quiet = np.errstate(all="ignore")  # NaN/inf/overflow follow the C++ without warnings
_CHUNK = 1 << 16  # values per encoding pass
_DOUBLING_MAX_BYTES = 16384  # shorter half-byte streams are walked by pointer doubling


# -- shared helpers ---------------------------------------------------------------------------
def _as_doubles(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values, dtype=np.float64).reshape(-1)


def _as_bytes(buffer: bytes | bytearray | memoryview | np.ndarray) -> np.ndarray:
    if isinstance(buffer, np.ndarray):
        if buffer.dtype.itemsize != 1:
            raise TypeError(f"numpress buffer must hold bytes, not {buffer.dtype}")
        return np.ascontiguousarray(buffer).reshape(-1).view(np.uint8)
    return np.frombuffer(buffer, dtype=np.uint8)


def _cvtt(v: np.ndarray, bits: int) -> np.ndarray:
    """x86 ``cvttsd2si``: truncate toward zero; NaN or out of range gives the minimum int."""
    limit = 2.0 ** (bits - 1)
    ok = (v >= -limit) & (v < limit)
    if ok.all():
        return v.astype(np.int64)
    out = np.where(ok, v, 0.0).astype(np.int64)
    out[~ok] = -(2 ** (bits - 1))
    return out


def _check_fixed_point(fixed_point: float, codes: np.ndarray, error: type[Exception]) -> None:
    """0 or NaN makes every value junk; inf only decodes stored zeros (as zeros)."""
    if codes.size and (
        math.isnan(fixed_point)
        or fixed_point == 0
        or (math.isinf(fixed_point) and np.any(codes != 0))
    ):
        raise error(f"numpress fixed point {fixed_point!r} cannot represent these values")


def _scalar_exp(v: float) -> float:
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def _exact(func: str, x: np.ndarray) -> np.ndarray:
    """libm's exp/log for every element (what the C++ calls), not numpy's SIMD variants."""
    scalar = _scalar_exp if func == "exp" else math.log
    return np.frompyfunc(scalar, 1, 1)(x).astype(np.float64)


@functools.cache
def _complex_exp_is_libm() -> bool:
    # numpy's complex exp(r + 0j) calls libm exp(r); check that it still does
    probe = np.linspace(-3.0, 30.0, 4001)
    return bool(np.array_equal(np.exp(probe.astype(np.complex128)).real, _exact("exp", probe)))


def _libm_exp(x: np.ndarray) -> np.ndarray:
    if not _complex_exp_is_libm():
        return _exact("exp", x)
    out = np.exp(x.astype(np.complex128)).real
    big = np.abs(x) > 700.0  # glibc cexp rescales near overflow
    out[big] = _exact("exp", x[big])
    return out


# -- half-byte ints ---------------------------------------------------------------------------
def _nibble_reverse(v: np.ndarray) -> np.ndarray:
    v = v.byteswap()
    return ((v & 0x0F0F0F0F) << 4) | ((v >> 4) & 0x0F0F0F0F)


def _add_codes(x: np.ndarray, offset: int, words: np.ndarray) -> int:
    """Add the half-byte codes of ``x``, from bit ``offset`` on, into 32-bit ``words``."""
    signed = x.view(np.int32)
    negative = signed < 0
    z = x ^ (signed >> 31).view(np.uint32)  # leading F nibbles of x are leading 0 nibbles of z
    lead = np.minimum(8 - ((np.frexp(z)[1] + 3) >> 2), 8 - negative)  # an all-F int keeps one
    head = np.where(lead > 0, lead + 8 * negative, 0).astype(np.uint64)
    data_bits = (32 - 4 * lead).astype(np.uint64)
    code = (head << data_bits) | (_nibble_reverse(x).astype(np.uint64) >> (32 - data_bits))
    bits = data_bits + 4
    end = np.cumsum(bits) + offset
    start = end - bits
    aligned = code << (64 - (start & 31) - bits)  # the code left-aligned in its two words
    first = offset >> 5
    word = (start >> 5).astype(np.intp) - first
    count = int(end[-1]) // 32 + 2 - first
    part = np.bincount(word, (aligned >> 32).astype(np.float64), count)  # disjoint bits: + is |
    part[1:] += np.bincount(word, (aligned & 0xFFFFFFFF).astype(np.float64), count - 1)
    words[first : first + count] += part
    return int(end[-1])


def _pack_ints(x: np.ndarray) -> np.ndarray:
    """Half-byte-encode uint32 ``x`` into bytes, as the C++ ``encodeInt`` + packing loop."""
    words = np.zeros(x.size * 36 // 32 + 3, dtype=np.float64)
    end = 0
    for lo in range(0, x.size, _CHUNK):  # chunks keep the temporaries in cache
        end = _add_codes(x[lo : lo + _CHUNK], end, words)
    return words[: end // 32 + 1].astype(">u4").view(np.uint8)[: (end + 7) // 8]


@functools.cache
def _unit_table() -> np.ndarray:
    """At ``state << 16 | unit``: ``next_state << 16 | head_bits`` for 4-nibble units.

    The state counts nibbles left before the next head; head bit 7 - j marks nibble j a head.
    """
    state = np.repeat(np.arange(9, dtype=np.uint8)[:, None], 1 << 16, axis=1)
    unit = np.arange(1 << 16, dtype=np.uint32)
    heads = np.zeros_like(state)
    for j in range(4):
        at_head = state == 0
        heads |= at_head.astype(np.uint8) << (7 - j)
        state = np.where(at_head, _HEAD_DATA[(unit >> (12 - 4 * j)) & 15], state - 1)
    return ((state.astype(np.intp) << 16) | heads).ravel()


def _walk(cols: np.ndarray, state: np.ndarray, rows: range, heads: np.ndarray | None = None):
    """Run lanes (states << 16) through unit rows ``rows`` of ``cols``, recording head bits."""
    table = _unit_table()
    for j in rows:
        step = table[state | (cols[j] if state.ndim == 1 else cols[j][:, None])]
        if heads is not None:
            heads[j] = step  # keeps the low byte
        state = step & -65536
    return state


def _block_entries(cols: np.ndarray, sync: int, heads: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each block's entry state and the blocks whose 9 lanes did not meet in ``sync`` units.

    Records head bits of units ``sync:`` of the other blocks (those are entry-independent).
    """
    width, blocks = cols.shape
    lanes = _walk(cols, np.tile(np.arange(9, dtype=np.intp) << 16, (blocks, 1)), range(sync))
    met = (lanes == lanes[:, :1]).all(axis=1)
    met[0] = True  # block 0 starts in state 0, which is lane 0
    exits = _walk(cols, lanes[:, 0], range(sync, width), heads)
    loose = np.flatnonzero(~met)
    if loose.size == 0:
        return np.concatenate(([0], exits[:-1])), loose
    maps = np.repeat(exits[:, None] >> 16, 9, axis=1)
    maps[loose] = _walk(cols[:, loose], lanes[loose], range(sync, width)) >> 16
    step = 1
    while step < blocks:  # prefix-compose the blocks' entry -> exit maps
        maps[step:] = np.take_along_axis(maps[step:], maps[:-step], axis=1)
        step *= 2
    return np.concatenate(([0], maps[:-1, 0] << 16)), loose


def _heads_by_doubling(stream: np.ndarray) -> np.ndarray:
    """Head bits by pointer doubling: fewer numpy calls than lanes for short streams."""
    size = 2 * stream.size
    nibbles = np.empty(size, dtype=np.uint8)
    nibbles[0::2], nibbles[1::2] = stream >> 4, stream & 15
    jump = np.append(np.minimum(np.arange(1, size + 1) + _HEAD_DATA[nibbles], size), size)
    seen = np.zeros(size + 1, dtype=bool)
    seen[0] = True
    while jump[0] < size:  # seen = {jump^t(0): t < 2^k} while jump = jump^(2^k)
        seen[jump[np.flatnonzero(seen)]] = True
        jump = jump[jump]
    return np.packbits(seen[:size])


def _head_mask(stream: np.ndarray, padded: np.ndarray) -> np.ndarray:
    """Bit 7 - j of byte i is set when nibble 8i + j starts an int (C++ ``decodeInt`` order)."""
    if stream.size <= _DOUBLING_MAX_BYTES:
        return _heads_by_doubling(stream)
    units = (stream.size + 1) // 2
    width = 2 * int(np.clip(np.sqrt(units / 2), 4, 256))  # even: units pair up into bytes
    blocks = -(-units // width)
    cols = padded[: blocks * width * 2].view(">u2").reshape(blocks, width).T.astype(np.uint16)
    heads = np.empty((width, blocks), dtype=np.uint8)
    sync = min(width // 4, 64)
    entry, loose = _block_entries(cols, sync, heads)
    after = _walk(cols, entry, range(sync), heads)
    if loose.size:
        rest = np.empty((width, loose.size), dtype=np.uint8)
        _walk(cols[:, loose], after[loose], range(sync, width), rest)
        heads[sync:, loose] = rest[sync:]
    heads = heads.T.ravel()
    size = 2 * stream.size
    mask = (heads[0::2] | (heads[1::2] >> 4))[: -(-size // 8)]
    mask[-1] &= (0xFF00 >> (size % 8)) & 0xFF if size % 8 else 0xFF  # heads in the padding
    return mask


def _unpack_ints(stream: np.ndarray) -> np.ndarray:
    """Decode a half-byte int stream to uint32, raising where the C++ ``decodeInt`` throws."""
    size = 2 * stream.size
    if size == 0:
        return np.empty(0, dtype=np.uint32)
    padded = np.zeros(stream.size + 2 * 512 + 8, dtype=np.uint8)
    padded[: stream.size] = stream
    mask = _head_mask(stream, padded)
    windows = np.ndarray((stream.size,), dtype=">u8", buffer=padded, strides=(1,))
    out = np.empty(int(np.bitwise_count(mask).sum()), dtype=np.uint32)
    done = last = last_head = 0
    for lo in range(0, mask.size, _CHUNK // 8):  # chunks keep the temporaries in cache
        pos = np.flatnonzero(np.unpackbits(mask[lo : lo + _CHUNK // 8]).view(bool)) + 8 * lo
        if pos.size:
            window = windows[pos >> 1].astype(np.uint64) << ((pos & 1).astype(np.uint64) << 2)
            head = (window >> 60).astype(np.intp)
            data = _nibble_reverse(((window >> 28) & 0xFFFFFFFF).astype(np.uint32))
            out[done : done + pos.size] = (data & _LOW_MASK[head]) | _FILL[head]
            done, last, last_head = done + pos.size, int(pos[-1]), int(head[-1])
    if last == size - 1 and last_head == 0:  # the pad nibble of an odd-length stream
        return out[:-1]
    if last + int(_HEAD_DATA[last_head]) >= size:
        raise NumpressDecodeError(
            f"corrupt numpress half-byte stream: the int at nibble {last} runs past the end"
        )
    return out


# -- linear -----------------------------------------------------------------------------------
@_quiet
def optimal_linear_fixed_point(values: np.ndarray) -> float:
    """The largest fixed point whose ints and second differences stay within int32."""
    x = _as_doubles(values)
    if x.size == 0:
        return 0.0
    top = x[1] if x.size > 1 and x[0] < x[1] else x[0]  # std::max keeps a NaN in slot one
    if x.size > 2 and not math.isnan(top):
        residual = np.ceil(np.abs(x[2:] - (x[1:-1] + (x[1:-1] - x[:-2]))) + 1)
        largest = np.fmax.reduce(residual)  # a NaN never wins a std::max against a number
        top = largest if top < largest else top
    return float(np.floor(np.float64(2147483647.0) / top))


@_quiet
def encode_linear(values: np.ndarray, fixed_point: float | None = None) -> np.ndarray:
    """Encode ``values`` (e.g. m/z, retention times) with MS-Numpress linear prediction."""
    x = _as_doubles(values)
    fp = optimal_linear_fixed_point(x) if fixed_point is None else float(fixed_point)
    head = np.array([fp], dtype=">f8").view(np.uint8)
    if x.size and (math.isnan(fp) or fp == 0):
        raise NumpressEncodeError(f"no usable linear fixed point for these values ({fp!r})")
    scaled = x * fp + 0.5
    if np.any(scaled[2:] > _TWO63):
        raise NumpressEncodeError("a value times the linear fixed point overflows int64")
    ints = _cvtt(scaled, 64)
    firsts = (ints[:2] & 0xFFFFFFFF).astype("<u4").view(np.uint8)
    if x.size <= 2:
        return np.concatenate((head, firsts))
    residual = ints[2:] - (ints[1:-1] + (ints[1:-1] - ints[:-2]))  # wraps like the C++
    if np.any((residual > 2147483647) | (residual < -2147483648)):
        raise NumpressEncodeError(
            "a linear prediction residual exceeds int32; lower the fixed point"
        )
    return np.concatenate((head, firsts, _pack_ints(residual.astype(np.int32).view(np.uint32))))


@_quiet
def decode_linear(buffer: bytes | np.ndarray) -> np.ndarray:
    """Decode an MS-Numpress linear buffer (8 bytes: no value, 12 bytes: one value)."""
    data = _as_bytes(buffer)
    if data.size == 8:
        return np.empty(0, dtype=np.float64)
    if data.size < 12 or 12 < data.size < 16:
        raise NumpressDecodeError(f"numpress linear buffer of {data.size} bytes is truncated")
    fp = float(data[:8].view(">f8")[0])
    firsts = data[8:16].view("<u4").astype(np.int64)
    ints = np.concatenate((firsts, _unpack_ints(data[16:]).view(np.int32)))
    if ints.size > 2:  # [a, b - a, d2, d3, ...] integrated twice (wrapping, as the C++)
        ints[1] -= ints[0]
        np.cumsum(ints[1:], out=ints[1:])
        np.cumsum(ints, out=ints)
    _check_fixed_point(fp, ints, NumpressDecodeError)
    return ints.astype(np.float64) / fp


# -- slof -------------------------------------------------------------------------------------
@_quiet
def optimal_slof_fixed_point(values: np.ndarray) -> float:
    """The largest fixed point keeping ``log(x + 1) * fp`` within uint16."""
    x = _as_doubles(values)
    if x.size == 0:
        return 0.0
    finite = x[~np.isnan(x)]
    top = math.log(float(finite.max()) + 1) if finite.size and finite.max() > 0 else 1.0
    return float(math.floor(65535.0 / max(1.0, top)))


def _slof_scaled(x: np.ndarray, fp: float) -> np.ndarray:
    """``log(x + 1) * fp`` with libm's log wherever numpy's could change the rounded result."""
    shifted = x + 1
    scaled = np.log(shifted) * fp
    edge = scaled + 0.5
    close = np.abs(edge - np.rint(edge)) <= 1e-9 * (np.abs(edge) + 1)
    close |= np.abs(scaled - 65535.0) <= 1e-6
    if close.any():
        scaled[close] = _exact("log", shifted[close]) * fp
    return scaled


@_quiet
def encode_slof(values: np.ndarray, fixed_point: float | None = None) -> np.ndarray:
    """Encode intensities as uint16 fixed-point logarithms (MS-Numpress slof)."""
    x = _as_doubles(values)
    fp = optimal_slof_fixed_point(x) if fixed_point is None else float(fixed_point)
    if x.size and (math.isnan(fp) or fp == 0):
        raise NumpressEncodeError(f"no usable slof fixed point for these values ({fp!r})")
    scaled = _slof_scaled(x, fp)
    if np.any(scaled > 65535.0):
        raise NumpressEncodeError("a value overflows the slof fixed point (uint16)")
    codes = (_cvtt(scaled + 0.5, 32) & 0xFFFF).astype("<u2")
    return np.concatenate((np.array([fp], dtype=">f8").view(np.uint8), codes.view(np.uint8)))


@_quiet
def decode_slof(buffer: bytes | np.ndarray) -> np.ndarray:
    """Decode an MS-Numpress slof buffer."""
    data = _as_bytes(buffer)
    if data.size < 8 or data.size % 2:
        raise NumpressDecodeError(f"numpress slof buffer of {data.size} bytes is malformed")
    fp = float(data[:8].view(">f8")[0])
    codes = data[8:].view("<u2")
    _check_fixed_point(fp, codes, NumpressDecodeError)
    return _libm_exp(codes / fp) - 1


# -- pic --------------------------------------------------------------------------------------
@_quiet
def encode_pic(values: np.ndarray) -> np.ndarray:
    """Encode non-negative counts rounded to ints (MS-Numpress pic)."""
    x = _as_doubles(values)
    shifted = x + 0.5
    if np.any((shifted > 2147483647.0) | (x < -0.5)):
        raise NumpressEncodeError("numpress pic encodes only values in [-0.5, 2147483646.5]")
    return _pack_ints((_cvtt(shifted, 64) & 0xFFFFFFFF).astype(np.uint32))


def decode_pic(buffer: bytes | np.ndarray) -> np.ndarray:
    """Decode an MS-Numpress pic buffer."""
    return _unpack_ints(_as_bytes(buffer)).astype(np.float64)


_CODECS = (V.NUMPRESS_LINEAR, V.NUMPRESS_SLOF, V.NUMPRESS_PIC)  # their accessions
ENCODERS = dict(zip(_CODECS, (encode_linear, encode_slof, encode_pic), strict=True))
DECODERS = dict(zip(_CODECS, (decode_linear, decode_slof, decode_pic), strict=True))
