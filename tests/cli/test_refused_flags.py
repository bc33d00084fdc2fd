"""Flags that cannot act together are refused on the command line: one line naming both flags,
the usage exit status, and no output."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import DATA
from ..helpers.cli import assert_clean, one_line_error, run_cli

pytestmark = pytest.mark.slow  # runs the command line in a fresh process

EXIT_USAGE = 2


@pytest.mark.parametrize("extra", [[], ["--layout", "point"]])
def test_numpress_intensity_with_the_point_layout(tmp_path: Path, extra: list[str]) -> None:
    source = DATA / "pyteomics" / "test.mgf"
    result = run_cli(
        "convert", str(source), str(tmp_path / "out.mzpeak"), "--numpress-intensity", "slof",
        *extra, "--cluster", "inline",
    )  # fmt: skip
    assert result.returncode == EXIT_USAGE
    one_line_error(result, "--numpress-intensity slof needs --layout chunked")
    assert_clean(tmp_path)


def test_numpress_intensity_with_the_chunked_layout_is_accepted(tmp_path: Path) -> None:
    source = DATA / "pyteomics" / "test.mgf"
    result = run_cli(
        "convert", str(source), str(tmp_path / "out.mzpeak"), "--numpress-intensity", "slof",
        "--layout", "chunked", "--cluster", "inline", "-q",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.mzpeak").is_file()
