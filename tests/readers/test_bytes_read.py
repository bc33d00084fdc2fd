"""A guard against readers whose cost grows with where a spectrum sits in the file, which
times nothing: converting a real run replicated past 20 MB, in every input format, reads at
most three times the input's size (digest and survey included), counted by the kernel's
counter of the bytes this process read (``rchar`` of /proc/self/io). A reader that goes back
to the start of the file for each spectrum reads it once a spectrum and fails by far.

Everything the process reads counts (the conversion's own temporary files too), so the bound
holds for the conversion as a whole; a first, small conversion of the same format runs before
the count starts, so that imports and caches are not counted."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mzpeak_dask import convert

from ..conftest import DATA, INLINE
from ..helpers.mzmlb_files import replicated_mzmlb
from ..helpers.mzxml_files import replicated
from ..helpers.replicate import replicate

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/io"),
]

SIZE = 20_000_000


def _mzml(target: Path) -> Path:
    source = DATA / "mzdata" / "small.mzML"
    replicate(source, target, -(-SIZE // source.stat().st_size) + 1)
    return target


def _mzxml(target: Path) -> Path:
    replicated(DATA / "openms" / "test2.mzXML", target, SIZE + 1_000_000)
    return target


def _mgf(target: Path) -> Path:
    """small.mgf's spectra repeated (titles repeat; the reader keys nothing by them)."""
    data = (DATA / "mzdata" / "small.mgf").read_bytes()
    target.write_bytes(data * (-(-SIZE // len(data)) + 1))
    return target


def _mzmlb(target: Path) -> Path:
    source = DATA / "mzdata" / "small.mzMLb"
    replicated_mzmlb(source, target, -(-SIZE // source.stat().st_size) + 1)
    return target


FORMATS: dict[str, tuple[Callable[[Path], Path], str, Path]] = {
    "mzML": (_mzml, ".mzML", DATA / "mzdata" / "three_test_scans.mzML"),
    "mzXML": (_mzxml, ".mzXML", DATA / "depthcharge" / "TMT10-Trial-8.mzXML"),
    "MGF": (_mgf, ".mgf", DATA / "pyteomics" / "test.mgf"),
    "mzMLb": (_mzmlb, ".mzMLb", DATA / "mzdata" / "small.mzMLb"),
}


def _bytes_read() -> int:
    with open("/proc/self/io") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))


@pytest.mark.parametrize("name", ["mzML", "mzXML", "MGF", "mzMLb"])
def test_a_conversion_reads_its_input_at_most_three_times(tmp_path: Path, name: str) -> None:
    make, suffix, small = FORMATS[name]
    path = make(tmp_path / f"large{suffix}")
    size = path.stat().st_size
    assert size >= SIZE
    convert(small, tmp_path / "warm.mzpeak", cluster=INLINE)
    before = _bytes_read()
    result = convert(path, tmp_path / "large.mzpeak", cluster=INLINE)
    read = _bytes_read() - before
    assert result.spectra >= 300
    assert read <= 3 * size, f"{read:,} bytes read for a {size:,}-byte input"
