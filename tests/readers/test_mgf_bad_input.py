"""Bad MGF input: one line naming the file and the spectrum (its title and line), a non-zero
exit, and nothing at the output."""

from __future__ import annotations

from pathlib import Path

import pytest

from mzpeak_dask import InputError, SpectrumDecodeError, convert

from ..conftest import DATA, INLINE
from ..helpers.cli import assert_clean, one_line_error, run_cli

pytestmark = pytest.mark.slow  # each runs the command line in a fresh process

SOURCE = DATA / "depthcharge" / "TMT10-Trial-8.mgf"  # 7 spectra


def _lines() -> list[str]:
    return SOURCE.read_text().splitlines()


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "bad.mgf"
    path.write_text("\n".join(lines) + "\n")
    return path


def _fails(tmp_path: Path, path: Path, error: type, *fragments: str) -> None:
    with pytest.raises(error) as raised:
        convert(path, tmp_path / "out.mzpeak", cluster=INLINE)
    for fragment in fragments:
        assert fragment in str(raised.value)
    result = run_cli("convert", str(path), str(tmp_path / "out.mzpeak"), "--cluster", "inline")
    one_line_error(result, *fragments)
    assert_clean(tmp_path, path)


def test_a_block_without_end_ions(tmp_path: Path) -> None:
    lines = _lines()
    ends = [k for k, line in enumerate(lines) if line == "END IONS"]
    del lines[ends[2]]  # the third spectrum runs into the fourth's BEGIN IONS
    begins = [k for k, line in enumerate(lines) if line == "BEGIN IONS"]
    title = lines[begins[2] + 1]
    _fails(
        tmp_path,
        _write(tmp_path, lines),
        SpectrumDecodeError,
        "bad.mgf: spectrum index=2",
        title,
        f"line {begins[2] + 1}",
        "no END IONS",
    )


def test_a_non_numeric_peak(tmp_path: Path) -> None:
    lines = _lines()
    begins = [k for k, line in enumerate(lines) if line == "BEGIN IONS"]
    bad = begins[4] + 12
    mz = lines[bad].split()[0]
    lines[bad] = f"{mz} 12.5x"
    _fails(
        tmp_path,
        _write(tmp_path, lines),
        SpectrumDecodeError,
        "bad.mgf: spectrum index=4",
        lines[begins[4] + 1],
        f"line {bad + 1}",
        "not a number: '12.5x'",
    )


def test_a_truncated_file(tmp_path: Path) -> None:
    data = SOURCE.read_bytes()
    last = data.rindex(b"BEGIN IONS")
    path = tmp_path / "bad.mgf"
    path.write_bytes(data[: last + (len(data) - last) // 2])  # the last spectrum cut in two
    line = data[:last].count(b"\n") + 1
    title = data[last:].split(b"\n")[1].decode()
    _fails(tmp_path, path, InputError, "bad.mgf", "truncated", title, f"line {line}")
