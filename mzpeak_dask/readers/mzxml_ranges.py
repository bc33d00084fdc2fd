"""An mzXML input read by byte ranges where it lies: a local file or an object in storage,
through the same code.

The survey takes the scans' byte offsets from the ``<index name="scan">`` that
``<indexOffset>`` points at when its offsets start ``<scan`` elements (for an object in
storage, the sampled scans, fetched whole side by side) and it lists as many scans as the run's
``scanCount`` says, else from a scan of the input for ``<scan`` start tags; every scan, nested
ones too, is one item, in document order. The run is cut by item count, as it always was (so
the archive's row groups are what they were). Each partition reads its own span and parses it
with the lean parser (:mod:`.mzxml_scans`) as a small document: the header, the span, the
closing tags. A span cut inside a scan that holds nested scans is balanced: an empty ``<scan>``
opens each parent it lacks (items it skips) and the parents it leaves open are closed (a
parent's own content precedes its nested scans, so its record is whole). No read depends on
where a scan sits in the input: a partition costs its span and the header.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np

from ..model.records import SpectrumRecord
from ..storage.filecache import per_file
from .base import SPECTRA, ItemRange, Survey, input_error, spectrum_error
from .bytesource import ByteSource, read_bytes
from .mzml import _points_at
from .mzxml_scans import Build, parse_scans

_INDEX_OFFSET = re.compile(rb"<indexOffset>\s*(\d+)\s*</indexOffset>")
_SCAN_INDEX = re.compile(rb'<index\s+name="scan"\s*>(.*?)</index>', re.S)
_OFFSET = re.compile(rb"<offset\b[^>]*>\s*(\d+)\s*</offset>")
_SCAN_START = re.compile(rb"<scan[\s>]")
_SCAN_TAG = re.compile(rb"<scan(?=[\s>/])[^>]*>|</scan\s*>")
_RUN_END = b"</msRun>"
_SCAN_COUNT = re.compile(rb'<msRun\b[^>]*?\bscanCount="\s*(\d+)\s*"')
_NUM = re.compile(rb'\bnum="([^"]*)"')
_CLOSING = b"</msRun></mzXML>"
HEADER_BYTES = 1 << 20  # what the run's metadata is read from, as for a local file


def _listed_offsets(source: ByteSource) -> np.ndarray | None:
    """The offsets the scan index lists (sorted), or None without a coherent index."""
    m = _INDEX_OFFSET.search(source.read(source.size - 4096, source.size))
    if not m or int(m.group(1)) <= 0:
        return None
    start = int(m.group(1))
    if not source.read(start, start + 6).startswith(b"<index"):
        return None  # a stale offset (pyteomics' test.mzXML has one)
    found = _SCAN_INDEX.search(source.read(start, source.size))
    if found is None:
        return None
    return np.sort(np.array([int(o) for o in _OFFSET.findall(found.group(1))], dtype=np.int64))


def scan_offsets(name: str, source: ByteSource) -> np.ndarray:
    """The n + 1 offsets of the run's scans: each scan's start, then the end of the last
    (``name``: what errors call the input)."""
    listed = _listed_offsets(source)
    declared = _SCAN_COUNT.search(source.read(0, 1 << 16))
    if (
        listed is None
        or not len(listed)
        or (declared is not None and int(declared.group(1)) != len(listed))
        or not _points_at(source, listed, b"<scan")
    ):
        listed = np.fromiter(source.starts(_SCAN_START), dtype=np.int64)
    if not len(listed):
        raise input_error(name, "malformed mzXML (no <scan> element)")
    end = source.find(_RUN_END, int(listed[-1]))
    if end < 0:
        last = _NUM.search(source.read(int(listed[-1]), int(listed[-1]) + 4096))
        where = f"scan {last.group(1).decode(errors='replace')}: " if last else ""
        raise input_error(
            name, f"{where}the mzXML document is truncated (no closing </msRun> after it)"
        )
    return np.append(listed, end)


def survey(path: str, name: str, metadata) -> Survey:  # noqa: ANN001 - see below
    """The survey of an mzXML input, a file or an object in storage (``name``: what errors call
    it); ``metadata(head)`` reads the run's from its first bytes."""
    with ByteSource(path) as source:
        offsets = scan_offsets(name, source)
        meta = metadata(source.read(0, HEADER_BYTES))
    hints = {"header_stop": int(offsets[0]), "cut_by_bytes": False}
    return Survey(len(offsets) - 1, 0, meta, spectrum_offsets=offsets, hints=hints)


@per_file(8)
def _header(path: str, header_stop: int) -> bytes:
    """The document up to its first scan, kept per worker process."""
    return read_bytes(path, 0, header_stop)


def balanced(body: bytes) -> tuple[bytes, int]:
    """``body`` with the scans it closes without opening opened first (empty placeholders)
    and those it leaves open closed; also the number of placeholders put before its items."""
    depth = lowest = 0
    for m in _SCAN_TAG.finditer(body):
        tag = m.group()
        depth += -1 if tag.startswith(b"</") else 0 if tag.endswith(b"/>") else 1
        lowest = min(lowest, depth)
    lead = -lowest
    opened = b"".join(b'<scan num="mzpeak-dask-placeholder-%d">' % k for k in range(lead))
    return opened + body + b"</scan>" * (depth + lead), lead


@per_file(8)
def _located(path: str, name: str) -> tuple[np.ndarray, int]:
    """The scans' offsets and where the header ends, for a read given no byte offsets."""
    with ByteSource(path) as source:
        offsets = scan_offsets(name, source)
    return offsets, int(offsets[0])


def read_records(
    path: str, items: ItemRange, hints: dict[str, object], name: str, build: Build
) -> Iterator[SpectrumRecord]:
    """The records of the scans of ``items``, from their span of the input (``name``: what
    errors call it; ``build(info, position)`` makes a record of a scan's dictionary)."""
    header_stop = hints.get("header_stop")
    if items.byte_start is None or header_stop is None:
        offsets, header_stop = _located(path, name)
        items = ItemRange(
            items.kind, items.start, items.stop, int(offsets[items.start]), int(offsets[items.stop])
        )
    body, lead = balanced(read_bytes(path, items.byte_start, items.byte_stop))
    document = _header(path, int(header_stop)) + body + _CLOSING
    count = 0
    for record in parse_scans(document, items.start, lead, name, build):
        if count < len(items):
            yield record
        count += 1
    if count != len(items):
        where = f"scans {items.start}-{items.stop - 1} (0-based)"
        raise spectrum_error(name, where, f"its span holds {count} scans, not {len(items)}")


__all__ = ["SPECTRA", "balanced", "read_records", "scan_offsets", "survey"]
