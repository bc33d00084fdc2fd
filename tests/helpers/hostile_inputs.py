"""Hostile inputs built from the real small.mzML run (nothing hostile is committed)."""

from __future__ import annotations

import base64
import re
import zlib
from pathlib import Path

import numpy as np

from ..conftest import BUNDLED

SMALL = BUNDLED / "small.mzML"
_ARRAY = re.compile(r"<binaryDataArray .*?</binaryDataArray>", re.S)
_BINARY = re.compile(r"<binary>(.*?)</binary>", re.S)


def corrupt_binary(tmp_path: Path, spectrum_index: int, replace) -> Path:
    """small.mzML with the first <binary> of one spectrum replaced by ``replace(text)``."""
    text = SMALL.read_text()
    starts = [m.start() for m in re.finditer(r"<spectrum ", text)]
    at = text.index("<binary>", starts[spectrum_index]) + len("<binary>")
    end = text.index("</binary>", at)
    path = tmp_path / "corrupt.mzML"
    path.write_text(text[:at] + replace(text[at:end]) + text[end:])
    return path


def spectrum_span(text: str, k: int) -> tuple[int, int]:
    """Where spectrum ``k`` (0-based) of the document starts and ends."""
    start = [m.start() for m in re.finditer(r"<spectrum ", text)][k]
    return start, text.index("</spectrum>", start)


def spectrum_arrays(text: str, k: int) -> list[re.Match]:
    """The binaryDataArray elements of spectrum ``k``."""
    start, end = spectrum_span(text, k)
    return list(_ARRAY.finditer(text, start, end))


def decoded(array: re.Match) -> np.ndarray:
    """The float64 values of a zlib-compressed 64-bit binaryDataArray of small.mzML."""
    payload = _BINARY.search(array.group(0)).group(1)
    return np.frombuffer(zlib.decompress(base64.b64decode(payload)), dtype="<f8")


def with_payload(text: str, array: re.Match, payload: bytes) -> str:
    """``text`` with the binary of ``array`` replaced by ``payload`` (base64-encoded here)."""
    element = _BINARY.sub(
        lambda _: f"<binary>{base64.b64encode(payload).decode()}</binary>", array.group(0)
    )
    return text[: array.start()] + element + text[array.end() :]


def sync_flushed(values: np.ndarray) -> bytes:
    """A zlib stream of ``values`` cut at a sync flush: no final block, no checksum."""
    compressor = zlib.compressobj()
    return compressor.compress(values.astype("<f8").tobytes()) + compressor.flush(zlib.Z_SYNC_FLUSH)


def zeros_zlib(count: int) -> bytes:
    """``count`` zero float64 values, zlib-compressed (about 1000:1)."""
    compressor = zlib.compressobj(9)
    block = bytes(min(count * 8, 1 << 24))
    parts, remaining = [], count * 8
    while remaining:
        size = min(remaining, len(block))
        parts.append(compressor.compress(block[:size]))
        remaining -= size
    return b"".join(parts) + compressor.flush()


def write_spectrum(
    path: Path, k: int, *, mz: bytes, intensity: bytes | None = None, declared: int | None = None
) -> Path:
    """small.mzML with spectrum ``k``'s m/z (and intensity) payloads replaced and, with
    ``declared``, its defaultArrayLength changed."""
    text = SMALL.read_text()
    arrays = spectrum_arrays(text, k)
    if intensity is not None:
        text = with_payload(text, arrays[1], intensity)
    text = with_payload(text, arrays[0], mz)
    if declared is not None:
        start, _ = spectrum_span(text, k)
        end = text.index(">", start)
        head = re.sub(
            r'defaultArrayLength="\d+"', f'defaultArrayLength="{declared}"', text[start:end]
        )
        text = text[:start] + head + text[end:]
    path.write_text(text)
    return path
