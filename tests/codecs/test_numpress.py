"""MS-Numpress codecs: byte identity with pynumpress (the C++ reference), round trips, bad input.

pynumpress is only an oracle here. Its encoders leak their output, and it aborts the interpreter
wherever the C++ throws, so the bulk comparison runs in a spawned child process and every case
that may throw runs in a fresh ``python -c`` process.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import multiprocessing
import subprocess
import sys
import warnings
import zlib
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from mzpeak_dask.codecs import numpress as nq
from mzpeak_dask.codecs.numpress import NumpressEncodeError
from mzpeak_dask.errors import NumpressDecodeError

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
CORRUPT = DATA / "openms" / "FileFilter_39_input_corrupt.mzML"
UNREADABLE = {"FileFilter_39_input_corrupt.mzML", "IndexedmzMLFile_2_broken.mzML"}
MZML_NS = {"m": "http://psi.hupo.org/ms/mzml"}
HEAD_DATA = [8, 7, 6, 5, 4, 3, 2, 1, 0, 7, 6, 5, 4, 3, 2, 1]


# -- oracles ------------------------------------------------------------------------------------
def digest(data: bytes | np.ndarray | None) -> bytes | None:
    return None if data is None else hashlib.blake2b(bytes(memoryview(data))).digest()


def pynumpress_digests(items: list[tuple[np.ndarray, bool, bool, bool]]) -> list[tuple]:
    """Runs in a spawned child: pynumpress encodings (where ours did not raise), decoded back."""
    import pynumpress as pn

    out = []
    for x, linear_ok, slof_ok, pic_ok in items:
        fl, fs = pn.optimal_linear_fixed_point(x), pn.optimal_slof_fixed_point(x)
        lin = pn.encode_linear(x, fl).tobytes() if linear_ok else None
        slof = pn.encode_slof(x, fs).tobytes() if slof_ok else None
        pic = pn.encode_pic(x).tobytes() if pic_ok else None
        try:  # pynumpress cannot decode the 12-byte single-value buffer
            lin_back = pn.decode_linear(lin) if lin else None
        except ValueError:
            lin_back = None
        slof_back = pn.decode_slof(slof) if slof else None
        pic_back = pn.decode_pic(pic) if pic is not None else None
        out.append(
            (fl, fs, *map(digest, (lin, slof, pic)), *map(digest, (lin_back, slof_back, pic_back)))
        )
    return out


CHILD = """
import sys, numpy as np, pynumpress as pn
op, payload, fp = sys.argv[1], bytes.fromhex(sys.argv[2]), sys.argv[3]
x = np.frombuffer(payload, dtype=np.float64 if op.startswith("encode") else np.uint8)
try:
    if op in ("encode_linear", "encode_slof"):
        opt = getattr(pn, op.replace("encode", "optimal") + "_fixed_point")
        out = getattr(pn, op)(x, opt(x) if fp == "opt" else float(fp))
    else:
        out = getattr(pn, op)(x)
except ValueError:
    sys.exit(3)
sys.stdout.write(np.asarray(out).tobytes().hex())
"""


def reference_ints(data: bytes) -> list[int]:
    """Point-by-point half-byte int decoder written from the C++ rules (raises where it throws)."""
    size = 2 * len(data)
    nibble = lambda p: data[p >> 1] >> 4 if p % 2 == 0 else data[p >> 1] & 15  # noqa: E731
    pos, out = 0, []
    while pos < size:
        head = nibble(pos)
        if pos == size - 1 and head == 0:
            break
        count = HEAD_DATA[head]
        if pos + count >= size:
            raise NumpressDecodeError("truncated")
        value = sum(nibble(pos + 1 + i) << (4 * i) for i in range(count))
        if head > 8:
            value |= (0xFFFFFFFF << (4 * count)) & 0xFFFFFFFF
        out.append(value)
        pos += 1 + count
    return out


def outcome(func, *args) -> bytes | None:
    """Our result as bytes, or None when it raises one of our errors."""
    try:
        return func(*args).tobytes()
    except (NumpressDecodeError, NumpressEncodeError):
        return None


# -- the real files -----------------------------------------------------------------------------
def open_reader(path: Path, stack: contextlib.ExitStack):
    from pyteomics import mgf, mzml, mzxml

    name = path.name
    if name.endswith(".mzML.gz"):
        return mzml.MzML(stack.enter_context(gzip.open(path, "rb")), use_index=False)
    if name.endswith(".mzML"):
        return mzml.MzML(str(path), use_index=False)
    if name.endswith(".mzXML"):
        return mzxml.MzXML(str(path), use_index=False)
    return mgf.MGF(str(path)) if name.endswith(".mgf") else None


@lru_cache(maxsize=1)
def real_arrays() -> tuple[list[np.ndarray], list[str]]:
    """Every distinct m/z and intensity array pyteomics reads from ../shared/data."""
    arrays, names, seen = [], [], set()
    for path in sorted(DATA.rglob("*")):
        if path.name in UNREADABLE or not path.is_file():
            continue
        with contextlib.ExitStack() as stack, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reader = open_reader(path, stack)
            if reader is None:
                continue
            stack.enter_context(reader)
            with contextlib.suppress(Exception):  # keep what pyteomics read before failing
                for spectrum in reader:
                    for key in ("m/z array", "intensity array"):
                        if key in spectrum:
                            x = np.asarray(spectrum[key], dtype=np.float64)
                            if (key_digest := digest(x)) not in seen:
                                seen.add(key_digest)
                                arrays.append(x)
                                names.append(f"{path.relative_to(DATA)}: {key}")
    return arrays, names


@pytest.fixture(scope="module")
def oracle() -> tuple[list[np.ndarray], list[str], list[tuple], list[tuple]]:
    arrays, names = real_arrays()
    ours, items = [], []
    for x in arrays:
        lin, slof, pic = (outcome(f, x) for f in (nq.encode_linear, nq.encode_slof, nq.encode_pic))
        backs = [
            outcome(d, e) if e is not None else None
            for d, e in ((nq.decode_linear, lin), (nq.decode_slof, slof), (nq.decode_pic, pic))
        ]
        fixed = (nq.optimal_linear_fixed_point(x), nq.optimal_slof_fixed_point(x))
        ours.append((*fixed, *map(digest, (lin, slof, pic)), *map(digest, backs)))
        items.append((x, lin is not None, slof is not None, pic is not None))
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        theirs = pool.submit(pynumpress_digests, items).result(timeout=600)
    return arrays, names, ours, theirs


@pytest.mark.slow
def test_real_files_were_read():
    arrays, names = real_arrays()
    files = {name.split(": ")[0] for name in names}
    assert len(arrays) > 2000 and len(files) > 35, (len(arrays), len(files))
    assert sum(x.size for x in arrays) > 1_000_000


@pytest.mark.slow
def test_encoders_match_pynumpress_on_real_arrays(oracle):
    arrays, names, ours, theirs = oracle
    labels = ("linear fixed point", "slof fixed point", "linear", "slof", "pic")
    for name, mine, ref in zip(names, ours, theirs, strict=True):
        for label, a, b in zip(labels, mine[:5], ref[:5], strict=True):
            assert a == b, f"{name}: {label} differs from pynumpress"
    encoded = [sum(m[k] is not None for m in ours) for k in (2, 3, 4)]
    assert min(encoded) > 0.95 * len(arrays), encoded  # only out-of-range arrays are refused


@pytest.mark.slow
def test_decoders_match_pynumpress_on_real_arrays(oracle):
    arrays, names, ours, theirs = oracle
    compared = 0
    for name, mine, ref in zip(names, ours, theirs, strict=True):
        for label, a, b in zip(("linear", "slof", "pic"), mine[5:], ref[5:], strict=True):
            if b is not None:
                assert a == b, f"{name}: decode_{label} differs from pynumpress"
                compared += 1
    assert compared > 2.8 * len(arrays)


# -- edge cases against pynumpress, each in a fresh process (the C++ may abort) --------------
def corrupt_payloads() -> list[tuple[str, bytes]]:
    """The Numpress arrays of FileFilter_39_input_corrupt.mzML: (accession, raw bytes)."""
    out = []
    for array in etree.parse(str(CORRUPT)).iterfind(".//m:binaryDataArray", MZML_NS):
        accessions = {p.get("accession") for p in array.iterfind("m:cvParam", MZML_NS)}
        raw = base64.b64decode(array.findtext("m:binary", namespaces=MZML_NS))
        if "MS:1000574" in accessions:  # zlib compression
            raw = zlib.decompress(raw)
        out += [(acc, raw) for acc in accessions & nq.DECODERS.keys()]
    return out


F8 = np.array([1000.0], ">f8").tobytes()
EDGE_CASES = [  # (pynumpress function, payload, fixed point or "opt", expectation)
    ("encode_linear", [], "opt", "same"),
    ("encode_linear", [0.0], "opt", "same"),
    ("encode_linear", [0.0, 0.0], "opt", "same"),
    ("encode_linear", [5e-324], "opt", "same"),
    ("encode_linear", [500.0], "opt", "same"),
    ("encode_linear", [-1.0, -2.0], "opt", "same"),
    ("encode_linear", [1e30, -1e30], "10", "same"),
    ("encode_linear", [1.0, np.nan, 3.0], "opt", "same"),  # C++ throws: residual overflow
    ("encode_linear", [0.0, 0.0, 1e30], "10", "same"),  # C++ throws: LLONG_MAX
    ("encode_linear", [0.0, 0.0, 3e8], "10", "same"),  # C++ throws: INT_MAX
    ("encode_linear", [0.0, 0.0, np.nan], "1", "same"),  # C++ throws: NaN -> INT64_MIN
    ("encode_linear", [np.nan, np.nan, 2.0**63], "1", "same"),  # 2**63 is not > LLONG_MAX
    ("encode_linear", [1e10], "opt", "ours raises"),  # fixed point 0: C++ writes junk
    ("encode_linear", [np.nan, 1.0, 2.0], "opt", "ours raises"),  # fixed point NaN
    ("encode_slof", [], "opt", "same"),
    ("encode_slof", [0.0], "opt", "same"),
    ("encode_slof", [-0.5, -0.999, -1.0, -2.0, np.nan, -1e-300, 3.0], "100", "same"),
    ("encode_slof", [-1 + 1e-10, 1.0], "1e8", "same"),
    ("encode_slof", [1.0, 2.0, 1e5], "-100", "same"),
    ("encode_slof", [1e300], "100", "same"),  # C++ throws: USHRT_MAX
    ("encode_slof", [np.inf, 1.0], "opt", "ours raises"),  # fixed point 0
    ("encode_pic", [], "", "same"),
    ("encode_pic", [np.nan, -0.5, 0.49999999999999994, 2147483646.5, 1.5, 2.5], "", "same"),
    ("encode_pic", [-0.6], "", "same"),  # C++ throws
    ("encode_pic", [2147483647.0], "", "same"),  # C++ throws
    ("decode_pic", bytes([0x88, 0x80]), "", "same"),
    ("decode_pic", bytes([0x01]), "", "same"),  # C++ throws: truncated int
    ("decode_pic", bytes([0x88, 0x08]), "", "same"),  # C++ throws
    ("decode_linear", F8 + bytes(8) + bytes([0x80]), "", "same"),
    ("decode_linear", F8 + bytes(8) + bytes([0x01]), "", "same"),  # C++ throws
    ("decode_linear", F8 + bytes(8) + bytes([0xF0, 0x0F]), "", "same"),
    ("decode_linear", F8 + bytes([1, 0, 0, 0]), "", "ours decodes"),  # 12 bytes: one value
]
CODEC_NAMES = {"MS:1002312": "linear", "MS:1002313": "pic", "MS:1002314": "slof"}
EDGE_CASES += [("decode_" + CODEC_NAMES[acc], raw, "", "same") for acc, raw in corrupt_payloads()]


def ours_for(op: str, payload, fp: str):
    x = np.array(payload, dtype=np.float64) if op.startswith("encode") else payload
    if op in ("encode_linear", "encode_slof"):
        return outcome(getattr(nq, op), x, None if fp == "opt" else float(fp))
    return outcome(getattr(nq, op), x)


def pynumpress_in_fresh_process(op: str, payload, fp: str) -> bytes | None:
    """pynumpress' result as bytes, or None when it raises or aborts the interpreter."""
    data = np.array(payload, np.float64).tobytes() if op.startswith("encode") else payload
    run = subprocess.run(
        [sys.executable, "-c", CHILD, op, data.hex(), fp], capture_output=True, timeout=120
    )
    return bytes.fromhex(run.stdout.decode()) if run.returncode == 0 else None


@pytest.mark.slow
def test_edge_cases_match_pynumpress_in_fresh_processes():
    with ThreadPoolExecutor(max_workers=4) as pool:
        theirs = list(pool.map(lambda case: pynumpress_in_fresh_process(*case[:3]), EDGE_CASES))
    for (op, payload, fp, expect), ref in zip(EDGE_CASES, theirs, strict=True):
        mine = ours_for(op, payload, fp)
        case = f"{op}({payload!r:.70}, {fp})"
        if expect == "same":
            assert mine == ref, case
        elif expect == "ours raises":
            assert mine is None and ref is not None, case
        else:
            assert mine is not None and ref is None, case


def test_corrupt_file_raises_in_process():
    payloads = corrupt_payloads()
    assert len(payloads) == 2 and all(len(raw) > 16 for _, raw in payloads)
    for accession, raw in payloads:
        with pytest.raises(NumpressDecodeError, match="runs past the end"):
            nq.DECODERS[accession](raw)


def test_fixed_points_match_pynumpress():
    import pynumpress as pn

    cases = [[], [0.0], [0.0, 0.0], [np.nan, 1.0, 2.0], [1.0, np.nan, 3.0], [-5.0], [5.0, 1.0]]
    cases += [[1e-320], [3.0, 4.0, np.nan], [-1.0, -2.0], [np.inf], [1e300], [-1.0], [0.5, 7.0]]
    for case in cases:
        x = np.array(case, dtype=np.float64)
        for ours, theirs in (
            (nq.optimal_linear_fixed_point, pn.optimal_linear_fixed_point),
            (nq.optimal_slof_fixed_point, pn.optimal_slof_fixed_point),
        ):
            assert np.array_equal(ours(x), theirs(x), equal_nan=True), (case, ours(x), theirs(x))


def test_slof_rounding_ties_match_pynumpress():
    import pynumpress as pn  # uint16 range, so the C++ cannot throw here

    for fp in (2000.0, 4096.0):  # log(x + 1) * fp lands on k + 0.5: numpy's SIMD log flips some
        x = np.expm1((np.arange(65000) + 0.5) / fp)
        x = np.concatenate([x, np.nextafter(x, np.inf), np.nextafter(x, -np.inf)])
        assert nq.encode_slof(x, fp).tobytes() == pn.encode_slof(x, fp).tobytes()


# -- round trips ----------------------------------------------------------------------------
mz_like = st.lists(st.floats(0.0, 1e6, allow_subnormal=True), max_size=60).map(
    lambda v: np.array(sorted(v), dtype=np.float64)
)
counts = st.lists(st.floats(0.0, 1e12), max_size=60).map(np.array)
anything = st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=20).map(np.array)


def assert_linear_close(x: np.ndarray, back: np.ndarray) -> None:
    fp = nq.optimal_linear_fixed_point(x)
    assert back.shape == x.shape
    if np.isinf(fp):  # all values below 2**31 / DBL_MAX: the C++ stores zeros
        assert not back.any() and np.all(np.abs(x) < 1e-290)
    elif x.size:
        assert np.all(np.abs(back - x) <= (0.5 + 1e-6) / fp + 4 * np.spacing(x)), fp


@given(mz_like)
def test_linear_round_trip(x):
    encoded = nq.encode_linear(x)
    assert encoded.dtype == np.uint8 and encoded.size >= 8 + 4 * min(x.size, 2)
    assert_linear_close(x, nq.decode_linear(encoded))
    assert nq.decode_linear(bytes(encoded)).tobytes() == nq.decode_linear(encoded).tobytes()


@given(st.lists(st.floats(1e-300, 1e300), max_size=20).map(np.array))
def test_linear_huge_values_round_trip_or_refuse(x):
    try:
        encoded = nq.encode_linear(x)
    except NumpressEncodeError:
        return
    assert_linear_close(x, nq.decode_linear(encoded))


@given(counts)
def test_slof_round_trip(x):
    fp = nq.optimal_slof_fixed_point(x)
    back = nq.decode_slof(nq.encode_slof(x))
    assert back.shape == x.shape
    assert np.all(np.abs(np.log1p(back) - np.log1p(x)) <= (0.5 + 1e-6) / max(fp, 1) + 1e-12)
    big = x >= 1
    assert np.all(np.abs(back[big] - x[big]) <= 1e-3 * x[big])


@given(st.lists(st.floats(-0.5, 2147483646.5), max_size=60).map(np.array))
def test_pic_round_trip(x):
    back = nq.decode_pic(nq.encode_pic(x))
    assert back.shape == x.shape and np.all(np.abs(back - x) <= 0.5 + 1e-6)


@pytest.mark.parametrize("values", [[], [7.25], [7.25, 9.5], [0.0], [0.0, 0.0], [0.0] * 5])
def test_zero_one_two_values(values):
    import pynumpress as pn

    x = np.array(values, dtype=np.float64)
    lin, slof, pic = nq.encode_linear(x), nq.encode_slof(x), nq.encode_pic(x)
    assert lin.size == {0: 8, 1: 12, 2: 16}.get(x.size, 18)
    assert_linear_close(x, nq.decode_linear(lin))
    assert np.allclose(nq.decode_slof(slof), x, rtol=1e-3) and np.allclose(
        nq.decode_pic(pic), x, atol=0.5
    )
    if lin.size != 12:  # pynumpress refuses the 12-byte buffer
        assert nq.decode_linear(lin).tobytes() == pn.decode_linear(lin).tobytes()
    assert nq.decode_slof(slof).tobytes() == pn.decode_slof(slof).tobytes()
    assert nq.decode_pic(pic).tobytes() == pn.decode_pic(pic).tobytes()


# fewer than the profile's: each example also runs pynumpress
@settings(max_examples=60)
@given(mz_like, counts)
def test_small_random_arrays_match_pynumpress(mz, intensity):
    import pynumpress as pn  # these domains never make the C++ throw, so in-process is safe

    fl, fs = pn.optimal_linear_fixed_point(mz), pn.optimal_slof_fixed_point(intensity)
    assert nq.encode_linear(mz).tobytes() == pn.encode_linear(mz, fl).tobytes()
    assert nq.encode_slof(intensity).tobytes() == pn.encode_slof(intensity, fs).tobytes()
    counted = intensity[intensity <= 2147483646.0]
    assert nq.encode_pic(counted).tobytes() == pn.encode_pic(counted).tobytes()


# -- malformed input ------------------------------------------------------------------------
@contextlib.contextmanager
def walker(kind: str):
    """Force the blocked-lane walker (small blocks, loose lanes) or pointer doubling."""
    with mock.patch.object(nq, "_DOUBLING_MAX_BYTES", 0 if kind == "lanes" else 1 << 62):
        yield


def reference_linear(stream: bytes) -> list[float]:
    """decode_linear of fixed point 1000, first ints 0 and 0, then ``stream`` (int64 wrapping)."""
    ints = [0, 0]
    for diff in reference_ints(stream):
        signed = diff - (1 << 32) if diff >= 1 << 31 else diff
        value = (2 * ints[-1] - ints[-2] + signed + (1 << 63)) % (1 << 64) - (1 << 63)
        ints.append(value)
    return [float(v) / 1000.0 for v in ints]


def expected(reference, data: bytes) -> bytes | None:
    try:
        return np.array(reference(data), dtype=np.float64).tobytes()
    except NumpressDecodeError:
        return None


def assert_like_reference(data: bytes) -> None:
    pic, linear = expected(reference_ints, data), expected(reference_linear, data)
    for kind in ("lanes", "doubling"):
        with walker(kind):
            assert outcome(nq.decode_pic, data) == pic, (kind, data.hex())
            assert outcome(nq.decode_linear, F8 + bytes(8) + data) == linear, (kind, data.hex())


@given(st.binary(max_size=80))
def test_garbage_matches_reference_decoder(data):
    assert_like_reference(data)


# fewer than the profile's: streams of up to 2000 bytes through the reference decoder
@settings(max_examples=40)
@given(st.binary(min_size=1, max_size=5), st.integers(1, 400))
def test_repeating_streams_match_reference_decoder(pattern, repeat):
    assert_like_reference(pattern * repeat)  # periodic streams keep lanes from ever meeting


def test_long_streams_that_never_synchronise():
    for data in (b"\xff" * 40001, b"\x0f\xff" * 20000, b"\x9f\xff\xff\xff" * 9000):
        assert_like_reference(data)


# more than the profile's: random bytes reach each decoder's error paths rarely
@settings(max_examples=300)
@given(st.binary(max_size=64), st.sampled_from(["linear", "slof", "pic"]))
def test_random_bytes_decode_or_raise_numpress_error(data, codec):
    decode = {"linear": nq.decode_linear, "slof": nq.decode_slof, "pic": nq.decode_pic}[codec]
    try:
        result = decode(data)
    except NumpressDecodeError as error:
        assert str(error) and "\n" not in str(error)
    else:
        assert result.dtype == np.float64 and result.ndim == 1


@given(anything)
def test_our_encodings_always_decode(x):
    for encode, decode in ((nq.encode_linear, nq.decode_linear), (nq.encode_slof, nq.decode_slof)):
        try:
            encoded = encode(x)
        except NumpressEncodeError:
            continue
        assert decode(encoded).shape == x.shape
    if np.all((x >= -0.5) & (x + 0.5 <= 2147483647.0) | np.isnan(x)):
        assert nq.decode_pic(nq.encode_pic(x)).shape == x.shape
    else:
        with pytest.raises(NumpressEncodeError):
            nq.encode_pic(x)


@pytest.mark.parametrize("fixed_point", [0.0, np.nan, np.inf])
def test_unusable_fixed_points_raise(fixed_point):
    head = np.array([fixed_point], ">f8").tobytes()
    with pytest.raises(NumpressDecodeError):
        nq.decode_linear(head + bytes([5, 0, 0, 0]))
    with pytest.raises(NumpressDecodeError):
        nq.decode_slof(head + bytes([5, 0]))
    assert nq.decode_linear(head).size == 0 and nq.decode_slof(head).size == 0
    if np.isinf(fixed_point):  # what the C++ writes for [0.0]: zeros stay decodable
        assert nq.decode_linear(head + bytes(8)).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("size", [0, 1, 7, 9, 11, 13, 15])
def test_short_linear_buffers_raise(size):
    with pytest.raises(NumpressDecodeError):
        nq.decode_linear(bytes(size))


def test_odd_slof_payload_raises():
    with pytest.raises(NumpressDecodeError):  # the C++ reads one byte past the end here
        nq.decode_slof(F8 + b"\x01")


def test_codec_tables():
    assert nq.ENCODERS.keys() == nq.DECODERS.keys() == {"MS:1002312", "MS:1002313", "MS:1002314"}
    assert nq.DECODERS["MS:1002312"] is nq.decode_linear
    assert nq.ENCODERS["MS:1002314"] is nq.encode_slof
