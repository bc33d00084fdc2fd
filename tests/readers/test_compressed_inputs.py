"""gzip/bzip2 inputs decompress into staging only as far as their size allows, and zlib-ng's
gzip reader gives what the standard library's gives."""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mzpeak_dask import InputError, convert
from mzpeak_dask.readers import detect
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


def _outcome(path: Path, staging: Path):  # noqa: ANN202
    try:
        out = Path(decompress_to(str(path), str(staging)))
    except InputError as exc:
        return "error", str(exc), sorted(p.name for p in staging.iterdir())
    if out == path:  # its magic bytes changed: not taken for gzip
        return "as it is", None
    data = out.read_bytes()
    out.unlink()
    return "value", data


def _both(path: Path, tmp_path: Path):  # noqa: ANN202
    """``decompress_to``'s outcome with zlib-ng's gzip reader, and with the standard library
    alone (its staging folders emptied after)."""
    outcomes = []
    for fast in (True, False):
        staging = tmp_path / f"staging-{fast}"
        staging.mkdir(exist_ok=True)
        with pytest.MonkeyPatch.context() as patch:
            if not fast:
                patch.setattr(detect, "_fast_gzip", None)
            outcomes.append(_outcome(path, staging))
    return outcomes


def _gzip_member(payload: bytes, header_crc: bytes | None = None) -> bytes:
    """A gzip member of ``payload``, with a header CRC field (FHCRC) when given."""
    deflater = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = deflater.compress(payload) + deflater.flush()
    flags = 0x02 if header_crc is not None else 0
    header = b"\x1f\x8b\x08" + bytes([flags]) + b"\0\0\0\0\0\xff" + (header_crc or b"")
    trailer = struct.pack("<II", zlib.crc32(payload), len(payload) & 0xFFFFFFFF)
    return header + body + trailer


def test_a_header_checksum_only_zlib_ng_checks_is_read_as_the_standard_library_reads_it(
    tmp_path: Path,
) -> None:
    """zlib-ng's reader refuses a wrong header CRC, the standard library's does not check it:
    the input is then decompressed as the standard library decompresses it."""
    text = TINY.read_bytes()
    path = tmp_path / "hcrc.mzML.gz"
    path.write_bytes(_gzip_member(text, header_crc=b"\x12\x34"))
    with pytest.raises(gzip.BadGzipFile), detect._fast_gzip.open(path, "rb") as f:
        f.read()
    fast, standard = _both(path, tmp_path)
    assert fast == standard == ("value", text)


@given(
    change=st.sampled_from(["flip", "cut", "append", "append zeros", "second member"]),
    at=st.floats(0, 1, exclude_max=True),
    bit=st.integers(0, 7),
    extra=st.binary(min_size=1, max_size=12),
)
def test_mangled_gzip_inputs_decompress_as_with_the_standard_library(
    tmp_path_factory: pytest.TempPathFactory, change: str, at: float, bit: int, extra: bytes
) -> None:
    tmp_path = tmp_path_factory.mktemp("gz")
    text = TINY.read_bytes()
    blob = bytearray(_gzip_member(text))
    where = int(at * len(blob))
    if change == "flip":
        blob[where] ^= 1 << bit
    elif change == "cut":
        del blob[where:]
    elif change == "append":
        blob += extra
    elif change == "append zeros":
        blob += bytes(len(extra))
    else:
        blob += _gzip_member(extra)
    path = tmp_path / "mangled.mzML.gz"
    path.write_bytes(bytes(blob))
    fast, standard = _both(path, tmp_path)
    assert fast == standard
