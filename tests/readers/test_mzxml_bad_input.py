"""Bad mzXML input, made from real runs: one line naming the file and the scan (its number),
an error of mzpeak_dask's own, a non-zero exit in the command line, nothing at the output.
Payloads are bounded by what their scan declares before anything is inflated."""

from __future__ import annotations

import base64
import re
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from mzpeak_dask import InputError, SpectrumDecodeError, convert

from ..conftest import DATA, INLINE
from ..helpers.cli import assert_clean, one_line_error, run_cli

TMT = DATA / "depthcharge" / "TMT10-Trial-8.mzXML"  # uncompressed, 64-bit, with an index
ZLIB = DATA / "ms_deisotope" / "microscans.mzXML"  # zlib, 32-bit, compressedLen
_SCAN = re.compile(rb"<scan\s[^>]*?\bnum=\"(\d+)\"")
_PEAKS = re.compile(rb"(<peaks\b[^>]*>)([^<]*)(</peaks>)")


def _edited(source: Path, target: Path, k: int, edit: Callable[[bytes], bytes]) -> bytes:
    """``source`` with scan ``k`` (0-based, document order) passed through ``edit``; returns
    the scan's number."""
    data = source.read_bytes()
    starts = [m.start() for m in _SCAN.finditer(data)] + [data.index(b"</msRun>")]
    scan = data[starts[k] : starts[k + 1]]
    target.write_bytes(data[: starts[k]] + edit(scan) + data[starts[k + 1] :])
    return _SCAN.match(scan).group(1)


def _payload(edit: Callable[[bytes], bytes]) -> Callable[[bytes], bytes]:
    return lambda scan: _PEAKS.sub(lambda m: m.group(1) + edit(m.group(2)) + m.group(3), scan)


def _attribute(key: bytes, value: bytes) -> Callable[[bytes], bytes]:
    pattern = re.compile(rb"\b" + key + rb'="[^"]*"')
    return lambda scan: pattern.sub(key + b'="' + value + b'"', scan, count=1)


def _bomb(scan: bytes) -> bytes:
    """A payload declaring its scan's 2,779 peaks (22 kB) that inflates to 80 MB."""
    bomb = base64.b64encode(zlib.compress(bytes(80_000_000))).decode().encode()
    return _attribute(b"compressedLen", b"0")(_payload(lambda _: bomb)(scan))


CASES = {
    "peaksCount one more than the payload holds": (
        TMT,
        _attribute(b"peaksCount", b"36"),
        SpectrumDecodeError,
        r"peaksCount is 36, the payload holds 35 peaks",
    ),
    "non-base64 payload": (
        TMT,
        _payload(lambda b64: b64[:40] + b"!*?" + b64[43:]),
        SpectrumDecodeError,
        r"corrupt base64",
    ),
    "payload cut short": (
        TMT,
        _payload(lambda b64: b64[:128]),  # 96 bytes: 6 pairs of 64-bit values
        SpectrumDecodeError,
        r"peaksCount is 35, the payload holds 6 peaks",
    ),
    "peaksCount past the ceiling": (
        TMT,
        _attribute(b"peaksCount", b"99999999999"),
        SpectrumDecodeError,
        r"declared peaksCount 99,999,999,999 is outside",
    ),
    "zlib bomb": (ZLIB, _bomb, SpectrumDecodeError, r"zlib data inflates past 22,232 bytes"),
    "compressedLen that disagrees with the payload": (
        ZLIB,
        _payload(lambda b64: base64.b64encode(base64.b64decode(b64)[:-9])),
        SpectrumDecodeError,
        r"compressedLen is \d+, the payload holds",
    ),
    "zlib stream cut short": (
        ZLIB,
        lambda scan: _attribute(b"compressedLen", b"0")(
            _payload(lambda b64: base64.b64encode(base64.b64decode(b64)[:-9]))(scan)
        ),
        SpectrumDecodeError,
        r"(truncated|corrupt) zlib data",
    ),
    "unsupported precision": (
        TMT,
        _attribute(b"precision", b"16"),
        SpectrumDecodeError,
        r"unsupported peaks precision='16'",
    ),
    "scan element cut short": (
        TMT,
        lambda scan: scan[: scan.index(b"</peaks>") - 100],
        InputError,
        r"malformed mzXML",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_scan_names_the_file_and_the_scan(tmp_path: Path, case: str) -> None:
    source, edit, error, message = CASES[case]
    path = tmp_path / "bad.mzXML"
    num = _edited(source, path, 5 if source == TMT else 1, edit).decode()
    with pytest.raises(error, match=rf"^{re.escape(str(path))}: scan {num}: .*{message}"):
        convert(path, tmp_path / "out.mzpeak", cluster=INLINE)
    assert_clean(tmp_path, path)


def test_a_file_cut_inside_a_scan_names_it(tmp_path: Path) -> None:
    data = TMT.read_bytes()
    path = tmp_path / "truncated.mzXML"
    path.write_bytes(data[: len(data) * 6 // 10])
    last = _SCAN.findall(data[: len(data) * 6 // 10])[-1].decode()
    with pytest.raises(InputError, match=rf"truncated\.mzXML: scan {last}: .*truncated"):
        convert(path, tmp_path / "out.mzpeak", cluster=INLINE)
    assert_clean(tmp_path, path)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["peaksCount one more than the payload holds", "truncated"])
def test_the_command_line_says_one_line_and_leaves_nothing(tmp_path: Path, case: str) -> None:
    path = tmp_path / "bad.mzXML"
    if case == "truncated":
        data = TMT.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        fragment = "truncated"
    else:
        _edited(TMT, path, 5, CASES[case][1])
        fragment = "peaksCount is 36"
    result = run_cli("convert", str(path), str(tmp_path / "out.mzpeak"), "--cluster", "inline")
    one_line_error(result, "bad.mzXML", "scan ", fragment)
    assert_clean(tmp_path, path)
