"""gzip/bzip2 inputs decompress into staging only as far as their size allows."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from mzpeak_dask import InputError, convert
from mzpeak_dask.readers.detect import (
    MAX_DECOMPRESSION_RATIO,
    MIN_DECOMPRESSED_LIMIT,
    decompress_to,
)

from ..conftest import DATA, INLINE

TINY = DATA / "pyteomics" / "tiny.pwiz.1.1.mzML"


def _padded_gzip(path: Path, padding: int) -> Path:
    """tiny.pwiz.1.1.mzML with an XML comment of ``padding`` spaces inside its root element,
    gzipped: a valid run whose gzip expands about 1000-fold."""
    text = TINY.read_bytes()
    cut = text.index(b">", text.index(b"<mzML")) + 1
    with gzip.open(path, "wb", compresslevel=6) as out:
        out.write(text[:cut] + b"\n<!--")
        block = b" " * (1 << 20)
        for _ in range(padding >> 20):
            out.write(block)
        out.write(b"-->" + text[cut:])
    return path


def test_a_gzip_bomb_is_refused_before_filling_the_disk(tmp_path: Path) -> None:
    path = _padded_gzip(tmp_path / "bomb.mzML.gz", MIN_DECOMPRESSED_LIMIT + (8 << 20))
    limit = max(MIN_DECOMPRESSED_LIMIT, MAX_DECOMPRESSION_RATIO * path.stat().st_size)
    assert limit == MIN_DECOMPRESSED_LIMIT  # 72 MiB from some 80 kB: far past 100x
    with pytest.raises(
        InputError, match=rf"bomb\.mzML\.gz: gzip data decompresses to more than {limit:,} bytes"
    ):
        convert(path, tmp_path / "out.mzpeak", cluster=INLINE)
    assert sorted(tmp_path.iterdir()) == [path]
    staging = tmp_path / "staging"
    staging.mkdir()
    with pytest.raises(InputError, match="decompression bomb"):
        decompress_to(str(path), str(staging))
    assert list(staging.iterdir()) == []


def test_real_compressed_inputs_stay_far_below_the_ceiling(tmp_path: Path) -> None:
    for path in sorted(DATA.rglob("*.mzML.gz")) + sorted(DATA.rglob("*.mzML.bz2")):
        out = Path(decompress_to(str(path), str(tmp_path)))
        assert out.stat().st_size < 10 * path.stat().st_size  # real files: 1.5x to 6.3x
        out.unlink()
