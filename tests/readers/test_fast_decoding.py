"""The fast base64 and zlib paths (pybase64, zlib-ng) decode what the standard library
decodes, bit for bit, and leave every refusal and every error message to it: each payload is
decoded twice, with the fast paths and with the standard library alone, and the outcomes
(bytes, or the error's words) must be equal."""

from __future__ import annotations

import base64
import zlib

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mzpeak_dask.format import vocabulary as V
from mzpeak_dask.readers import fast_decoding
from mzpeak_dask.readers.binary import BinaryDecodeError, b64decode, decode_bytes
from mzpeak_dask.readers.fast_decoding import available, base64_or_none, inflated_or_none

from ..helpers.hostile_inputs import SMALL, decoded, spectrum_arrays, sync_flushed

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
STRAY = "= \n\t\r-_!*.\x00é"


def test_both_fast_paths_are_installed() -> None:
    # dependencies of the package: without them every payload silently takes the slow path
    assert available() == {"pybase64": True, "zlib-ng": True}


def _outcome(call, *args):  # noqa: ANN001, ANN202
    try:
        result = call(*args)
    except BinaryDecodeError as exc:
        return "error", str(exc)
    return "value", result.tobytes() if isinstance(result, np.ndarray) else result


def _both(monkeypatch: pytest.MonkeyPatch, call, *args):  # noqa: ANN001, ANN202
    fast = _outcome(call, *args)
    with monkeypatch.context() as standard_only:
        standard_only.setattr(fast_decoding, "_base64", None)
        standard_only.setattr(fast_decoding, "_zlib", None)
        standard = _outcome(call, *args)
    return fast, standard


@st.composite
def mangled_base64(draw) -> str:  # noqa: ANN001
    """Valid base64 of random bytes, then a few insertions, deletions and replacements from
    the alphabet, padding, whitespace and characters no base64 holds."""
    text = list(base64.b64encode(draw(st.binary(max_size=40))).decode())
    pick = st.sampled_from(ALPHABET + STRAY)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["insert", "delete", "replace"]))
        if kind == "insert":
            text.insert(at, draw(pick))
        elif text:
            at = min(at, len(text) - 1)
            if kind == "delete":
                del text[at]
            else:
                text[at] = draw(pick)
    return "".join(text)


# more than the profile's: mangled inputs on which the fast decoder and the standard
# library's could part are rare
@settings(max_examples=1500)
@given(text=mangled_base64())
def test_base64_decodes_as_the_standard_library(text: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, standard = _both(monkeypatch, b64decode, text)
    assert fast == standard


def test_base64_the_fast_decoder_refuses_goes_to_the_standard_library() -> None:
    # binascii's strict mode takes a final quantum with stray bits and a lone "=", pybase64
    # does not: the standard library's bytes, not an error
    text = "lHn7Cc3imYck="
    assert base64_or_none(text) is None
    assert b64decode(text) == base64.b64decode(text, validate=True)
    assert base64_or_none("lHn7Cc3imYc=") == base64.b64decode("lHn7Cc3imYc=")


@st.composite
def mangled_zlib(draw) -> tuple[bytes, int]:  # noqa: ANN001
    """A zlib stream of float64 values (smooth or random, at a random level) and the number of
    values it declares, then maybe cut, extended, bit-flipped, or declared one off."""
    count = draw(st.integers(1, 300))
    if draw(st.booleans()):
        values = np.linspace(100.0, draw(st.floats(101.0, 2000.0)), count)
    else:
        values = np.frombuffer(draw(st.binary(min_size=8 * count, max_size=8 * count)), "<f8")
    stream = bytearray(zlib.compress(values.tobytes(), draw(st.integers(0, 9))))
    declared = count
    change = draw(st.sampled_from(["none", "cut", "extend", "flip", "declare"]))
    if change == "cut":
        del stream[draw(st.integers(0, len(stream) - 1)) :]
    elif change == "extend":
        stream += draw(st.binary(min_size=1, max_size=8))
    elif change == "flip":
        at = draw(st.integers(0, len(stream) - 1))
        stream[at] ^= 1 << draw(st.integers(0, 7))
    elif change == "declare":
        declared += draw(st.sampled_from([-1, 1]))
    return bytes(stream), declared


# more than the profile's: mangled inputs on which the fast decoder and the standard
# library's could part are rare
@settings(max_examples=1500)
@given(case=mangled_zlib())
# a bit flipped in a stream of zeros: zlib refuses it (invalid literal/length code), libdeflate
# inflated it to 520 zero bytes, its checksum verified; zlib-ng refuses it as zlib does
@example(case=(b"x\x01c`\x18\x05\xe3!\xc0\xc0\x00\x00\x02\x08\x00\x01", 65))
def test_zlib_arrays_decode_as_with_the_standard_library(case: tuple[bytes, int]) -> None:
    stream, declared = case
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, standard = _both(
            monkeypatch, decode_bytes, stream, [V.ZLIB_COMPRESSION], V.FLOAT64, declared
        )
    assert fast == standard


def test_inflate_answers_only_a_stream_of_exactly_the_size() -> None:
    values = np.linspace(100.0, 2000.0, 1000)
    whole = zlib.compress(values.tobytes())
    assert inflated_or_none(whole, 8000) == values.tobytes()
    assert inflated_or_none(whole, 7999) is None  # holds more than declared
    assert inflated_or_none(whole, 8001) is None  # holds less
    assert inflated_or_none(whole[:-1], 8000) is None  # its checksum cut
    assert inflated_or_none(sync_flushed(values), 8000) is None  # no final block
    assert inflated_or_none(whole, 0) is None


def test_real_arrays_take_the_fast_paths_and_decode_as_before() -> None:
    """small.mzML's first spectrum (zlib, 64-bit): each fast step answers, and the arrays
    equal the standard library's decoding."""
    for array in spectrum_arrays(SMALL.read_text(), 0):
        payload = array.group(0).split("<binary>")[1].split("</binary>")[0].strip()
        raw = base64.b64decode(payload, validate=True)
        assert base64_or_none(payload) == raw
        expected = decoded(array)
        assert inflated_or_none(raw, expected.nbytes) == zlib.decompress(raw)
        assert np.array_equal(
            decode_bytes(raw, [V.ZLIB_COMPRESSION], V.FLOAT64, expected.size), expected
        )
