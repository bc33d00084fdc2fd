"""Binary arrays that lie: truncated zlib streams, declared lengths the data does not match,
payloads declaring more values than they can hold. Each is one error naming the file and the
spectrum, and nothing at the output."""

from __future__ import annotations

import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from mzpeak_dask import SpectrumDecodeError, convert
from mzpeak_dask.format import vocabulary as V
from mzpeak_dask.readers.binary import (
    MAX_ARRAY_VALUES,
    BinaryDecodeError,
    decode_bytes,
)

from ..conftest import INLINE
from ..helpers.hostile_inputs import (
    SMALL,
    decoded,
    spectrum_arrays,
    sync_flushed,
    write_spectrum,
    zeros_zlib,
)

ZLIB = [V.ZLIB_COMPRESSION]
SPECTRUM = 7  # scan=8 of small.mzML: 15,238 profile points, zlib, 64-bit


def _convert_fails(path: Path, tmp_path: Path, pattern: str) -> None:
    with pytest.raises(SpectrumDecodeError, match=pattern):
        convert(path, tmp_path / "out.mzpeak", cluster=INLINE)
    assert sorted(tmp_path.iterdir()) == [path]


@pytest.mark.slow
def test_truncated_zlib_stream_is_refused(tmp_path: Path) -> None:
    """The audit's case: the first 1,000 m/z values re-compressed with Z_SYNC_FLUSH and the
    rest of the stream dropped; pyteomics rejects it, and so must the conversion."""
    mz = decoded(spectrum_arrays(SMALL.read_text(), SPECTRUM)[0])
    path = write_spectrum(tmp_path / "cut.mzML", SPECTRUM, mz=sync_flushed(mz[:1000]))
    _convert_fails(path, tmp_path, r"cut\.mzML: spectrum .*scan=8: ")
    result = subprocess.run(
        [sys.executable, "-m", "mzpeak_dask", "convert", str(path), str(tmp_path / "o.mzpeak")]
        + ["--cluster", "inline"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "scan=8" in lines[0]


def test_truncated_stream_of_the_declared_length_is_refused() -> None:
    """Cut where a declared length happens to match: only the stream's missing end tells."""
    values = np.linspace(100.0, 2000.0, 1000)
    with pytest.raises(BinaryDecodeError, match="truncated zlib data"):
        decode_bytes(sync_flushed(values), ZLIB, V.FLOAT64, 1000)
    whole = zlib.compress(values.tobytes())
    assert np.array_equal(decode_bytes(whole, ZLIB, V.FLOAT64, 1000), values)


@pytest.mark.parametrize("declared", [999, 1001])
def test_an_array_must_hold_its_declared_length(declared: int) -> None:
    values = np.arange(1000, dtype="<f8")
    plain, packed = values.tobytes(), zlib.compress(values.tobytes())
    for raw, compressions in ((plain, [V.NO_COMPRESSION]), (packed, ZLIB)):
        with pytest.raises(BinaryDecodeError, match="declared length"):
            decode_bytes(raw, compressions, V.FLOAT64, declared)
        assert len(decode_bytes(raw, compressions, V.FLOAT64, 1000)) == 1000


def test_ascii_arrays_declare_strings() -> None:
    """arrayLength of a null-terminated ASCII array counts its strings (MzMLFile_6)."""
    raw = b"100\x00101\x00102\x00"
    assert len(decode_bytes(raw, [V.NO_COMPRESSION], V.ASCII, 3)) == len(raw)
    assert len(decode_bytes(zlib.compress(raw[:-1]), ZLIB, V.ASCII, 3)) == len(raw) - 1
    with pytest.raises(BinaryDecodeError, match="holds 3 strings"):
        decode_bytes(raw, [V.NO_COMPRESSION], V.ASCII, 12)


def test_declared_length_past_the_ceiling_is_refused_before_inflating(tmp_path: Path) -> None:
    """The audit's case, scaled down: defaultArrayLength="200000000", an m/z payload of a
    million zeros against the real intensities. It used to store them side by side."""
    path = write_spectrum(
        tmp_path / "long.mzML", SPECTRUM, mz=zeros_zlib(1_000_000), declared=200_000_000
    )
    _convert_fails(
        path, tmp_path, rf"long\.mzML: spectrum .*scan=8: .*200,000,000 .*{MAX_ARRAY_VALUES:,}"
    )


def test_declared_length_the_payload_cannot_hold_is_refused(tmp_path: Path) -> None:
    path = write_spectrum(
        tmp_path / "thin.mzML", SPECTRUM, mz=zeros_zlib(1_000_000), declared=30_000_000
    )
    _convert_fails(
        path, tmp_path, r"scan=8: .*corrupt zlib data: .* cannot hold the declared 30,000,000"
    )


def test_arrays_of_one_spectrum_with_other_lengths_are_refused(tmp_path: Path) -> None:
    """m/z of a million values against the spectrum's 15,238 intensities, both declared a
    million: the intensities do not hold their declared length."""
    path = write_spectrum(
        tmp_path / "mixed.mzML", SPECTRUM, mz=zeros_zlib(1_000_000), declared=1_000_000
    )
    _convert_fails(path, tmp_path, r"scan=8: .*holds 15,238 values, its declared length is 1,0")


def test_main_axis_and_intensity_of_other_lengths_are_refused(tmp_path: Path) -> None:
    """An m/z array declaring its own arrayLength: auxiliary arrays may hold another length,
    a spectrum's m/z and intensities may not."""
    path = write_spectrum(tmp_path / "own.mzML", SPECTRUM, mz=zeros_zlib(1_000_000))
    text = path.read_text()
    first = spectrum_arrays(text, SPECTRUM)[0]
    element = first.group(0).replace(
        "<binaryDataArray ", '<binaryDataArray arrayLength="1000000" ', 1
    )
    path.write_text(text[: first.start()] + element + text[first.end() :])
    _convert_fails(
        path, tmp_path, r"scan=8: the m/z array holds 1,000,000 values, the intensity array 15,238"
    )
