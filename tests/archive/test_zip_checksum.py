"""ZIP members checksummed by zlib-ng: the standard library's CRC-32, on any bytes."""

from __future__ import annotations

import zipfile
import zlib

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from mzpeak_dask import ConvertOptions, convert
from mzpeak_dask.archive import container, zip_checksum

from ..conftest import BUNDLED, INLINE


@given(st.binary(max_size=5000), st.integers(0, 0xFFFFFFFF))
def test_the_checksum_is_zlibs_from_any_starting_value(data: bytes, value: int) -> None:
    assert zip_checksum.crc32(data, value) == zlib.crc32(data, value)
    assert zip_checksum.crc32(memoryview(data)) == zlib.crc32(data)


@given(st.lists(st.binary(max_size=700), max_size=8))
def test_a_checksum_taken_write_by_write_is_the_whole_ones(writes: list[bytes]) -> None:
    value = 0
    for data in writes:
        value = zip_checksum.crc32(data, value)
    assert value == zlib.crc32(b"".join(writes))


def test_buffers_of_wider_items_are_checksummed_by_their_bytes() -> None:
    values = np.arange(1000, dtype=np.float64)
    assert zip_checksum.crc32(memoryview(values)) == zlib.crc32(values.tobytes())


def test_archives_carry_the_standard_librarys_checksums(tmp_path) -> None:
    """zipfile checksums with it once the container is imported, and every member of a
    written archive holds the CRC-32 zlib gives its bytes."""
    assert zipfile.crc32 is zip_checksum.crc32 and container.zip_checksum is zip_checksum
    output = tmp_path / "small.mzpeak"
    convert(BUNDLED / "small.mzML", output, ConvertOptions(), cluster=INLINE)
    with zipfile.ZipFile(output) as archive:
        assert len(archive.infolist()) >= 4
        for info in archive.infolist():
            assert info.CRC == zlib.crc32(archive.read(info)), info.filename
