"""mzXML files made by the tests: a real run replicated to the size users convert (its scans
renumbered, its scan index rebuilt so that every offset points at its scan)."""

from __future__ import annotations

import re
from pathlib import Path

_SCAN_START = re.compile(rb"<scan(?=[\s>/])")
_NUM = re.compile(rb'(<scan\s[^>]*?\bnum=")(\d+)(")')
_PRECURSOR_SCAN = re.compile(rb'(\bprecursorScanNum=")(\d+)(")')
_FIRST_NUM = re.compile(rb'<scan\s[^>]*?\bnum="(\d+)"')


def _renumbered(body: bytes, shift: int) -> bytes:
    def moved(m: re.Match) -> bytes:
        return m.group(1) + b"%d" % (int(m.group(2)) + shift) + m.group(3)

    return _PRECURSOR_SCAN.sub(moved, _NUM.sub(moved, body))


def replicated(source: Path, target: Path, size: int) -> int:
    """``source``'s scans repeated until the file holds at least ``size`` bytes, each copy's
    scan numbers (and precursor scan numbers) moved past the last copy's, with the run's
    ``scanCount``, a scan index and ``indexOffset`` of the new file; returns the number of
    scans written."""
    data = source.read_bytes()
    first = _SCAN_START.search(data).start()
    end = data.rindex(b"</msRun>")
    head, body = data[:first], data[first:end]
    nums = [int(n) for n in _FIRST_NUM.findall(body)]
    stride = max(nums) - min(nums) + 1
    copies = max(1, -(-(size - len(head)) // len(body)))
    head = re.sub(rb'(<msRun\b[^>]*?\bscanCount=")\d+', b"\\g<1>%d" % (copies * len(nums)), head)
    parts = [head] + [_renumbered(body, k * stride) for k in range(copies)]
    document = b"".join(parts) + b"</msRun>\n"
    offsets = [m.start() for m in _SCAN_START.finditer(document)]
    numbers = [int(n) for n in _FIRST_NUM.findall(document)]
    index = b"".join(
        b'<offset id="%d">%d</offset>\n' % (n, o) for n, o in zip(numbers, offsets, strict=True)
    )
    index_at = len(document)
    document += b'<index name="scan">\n' + index + b"</index>\n"
    document += b"<indexOffset>%d</indexOffset>\n</mzXML>\n" % index_at
    target.write_bytes(document)
    return len(offsets)
