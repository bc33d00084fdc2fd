"""Build large inputs by replicating a real mzML run ("synthetic by replication"), for the
tests and the benchmarks.

Each copy of the run's spectra gets new scan numbers (``scan=N`` in ids and ``spectrumRef``s),
new ``index`` attributes and retention times shifted past the previous copy; the output is an
indexed mzML with a rebuilt offset index. Chromatograms are kept once, from the original.

    python -m tests.helpers.replicate SOURCE.mzML OUTPUT.mzML --copies 30
    python -m tests.helpers.replicate SOURCE.mzML OUTPUT.mzML --target-mb 100
"""

from __future__ import annotations

import argparse
import hashlib
import re
from collections.abc import Callable
from pathlib import Path

_SPECTRUM = re.compile(rb"<spectrum\s.*?</spectrum>", re.S)
_SCAN_NUMBER = re.compile(rb'((?:id|spectrumRef)="[^"]*?scan=)(\d+)')
_INDEX = re.compile(rb'(<spectrum\s[^>]*?\bindex=")(\d+)')
_START_TIME = re.compile(rb'(accession="MS:1000016"[^>]*?value=")([^"]+)')
_ID = re.compile(rb'<(spectrum|chromatogram)\s[^>]*?\bid="([^"]*)"')


def _parts(text: bytes) -> tuple[bytes, list[bytes], bytes]:
    spectra = [m.group(0) for m in _SPECTRUM.finditer(text)]
    head = text[: text.index(spectra[0])]
    tail_start = text.rindex(spectra[-1]) + len(spectra[-1])
    tail = text[tail_start:]
    if b"<indexList" in tail:  # drop the old index; a new one is written
        tail = tail[: tail.index(b"</mzML>") + len(b"</mzML>")]
    return head, spectra, tail


def _shifted(
    spectrum: bytes, copy: int, scan_stride: int, index_offset: int, time_offset: float
) -> bytes:
    spectrum = _SCAN_NUMBER.sub(
        lambda m: m.group(1) + str(int(m.group(2)) + copy * scan_stride).encode(), spectrum
    )
    spectrum = _INDEX.sub(
        lambda m: m.group(1) + str(int(m.group(2)) + index_offset).encode(), spectrum, count=1
    )
    return _START_TIME.sub(
        lambda m: m.group(1) + repr(float(m.group(2)) + time_offset).encode(), spectrum
    )


def replicate(source: Path, output: Path, copies: int) -> int:
    """Write ``copies`` copies of ``source``'s spectra to ``output``; returns its size."""
    text = source.read_bytes()
    head, spectra, tail = _parts(text)
    head = (
        head.replace(b"<mzML", b'<indexedmzML xmlns="http://psi.hupo.org/ms/mzml">\n<mzML', 1)
        if b"<indexedmzML" not in head
        else head
    )
    head = re.sub(
        rb'(<spectrumList\s[^>]*?count=")\d+',
        lambda m: m.group(1) + str(len(spectra) * copies).encode(),
        head,
        count=1,
    )
    scans = [int(n) for n in re.findall(rb"scan=(\d+)", b"".join(spectra))] or [len(spectra)]
    times = [float(m.group(2)) for m in _START_TIME.finditer(b"".join(spectra))]
    span = (max(times) if times else 0.0) + 1.0
    offsets: list[tuple[str, bytes, int]] = []
    with open(output, "wb") as out:
        out.write(head)
        position = len(head)
        for copy in range(copies):
            for spectrum in spectra:
                new = _shifted(spectrum, copy, max(scans) + 1, copy * len(spectra), copy * span)
                kind, native_id = _ID.match(new).groups()
                offsets.append((kind.decode(), native_id, position))
                out.write(new)
                out.write(b"\n")
                position += len(new) + 1
        body_tail = tail
        for m in _ID.finditer(body_tail):
            offsets.append((m.group(1).decode(), m.group(2), position + m.start()))
        out.write(body_tail)
        position += len(body_tail)
        index_offset = position + 1
        lines = [b'\n<indexList count="2">']
        for kind in ("spectrum", "chromatogram"):
            lines.append(b'<index name="%s">' % kind.encode())
            lines += [
                b'<offset idRef="%s">%d</offset>' % (i, o) for k, i, o in offsets if k == kind
            ]
            lines.append(b"</index>")
        lines.append(b"</indexList>")
        lines.append(b"<indexListOffset>%d</indexListOffset>" % index_offset)
        lines.append(b"<fileChecksum>")
        out.write(b"\n".join(lines))
    with open(output, "rb") as written:  # the file up to here, read back block by block
        digest = hashlib.file_digest(written, "sha1")
    with open(output, "ab") as out:
        out.write(digest.hexdigest().encode() + b"</fileChecksum>\n</indexedmzML>\n")
    return output.stat().st_size


def copies_for(source: Path, target_mb: float) -> int:
    """The copies of ``source`` that make about ``target_mb`` MB."""
    return max(1, round(target_mb * 1e6 / source.stat().st_size))


def command(make: Callable[[Path, Path, int], int], description: str) -> None:
    """``SOURCE OUTPUT --copies N | --target-mb MB``: ``make(source, output, copies)``, which
    returns the output's size (this module's :func:`replicate`, or another format's)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("source", type=Path)
    parser.add_argument("output", type=Path)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--copies", type=int)
    group.add_argument("--target-mb", type=float)
    args = parser.parse_args()
    copies = args.copies or copies_for(args.source, args.target_mb)
    size = make(args.source, args.output, copies)
    print(f"{args.output}: {copies} copies, {size / 1e6:.1f} MB (synthetic by replication)")


def main() -> None:
    command(replicate, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
