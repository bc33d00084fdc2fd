"""mzML input (plain or indexed; gzip/bzip2 inputs are decompressed to a staging file first).

Partitioning uses byte offsets: the embedded ``<indexList>`` when every offset in it points at
the element it names, otherwise a scan of the file for ``<spectrum``/``<chromatogram`` start
tags (the broken-index case). A worker parses its range as a small self-contained document —
the file's header, its byte range, and the closing tags — with pyteomics, so it never needs the
whole index.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np

from ..format import vocabulary as V
from ..model.records import ChromatogramRecord, Param, SpectrumRecord
from ..storage.filecache import per_file
from ..storage.inputs import sample_spans
from .base import (
    CHROMATOGRAMS,
    SPECTRA,
    InputFormat,
    ItemRange,
    Survey,
    input_error,
    sample_positions,
)
from .bytesource import ByteSource, read_bytes
from .mzml_header import run_metadata_from_xml
from .mzml_lean import parse_records as parse_lean

_INDEX_LIST_OFFSET = re.compile(rb"<indexListOffset>\s*(\d+)\s*</indexListOffset>")
_INDEX = re.compile(rb'<index\s+name="(\w+)"\s*>(.*?)</index>', re.S)
_OFFSET = re.compile(rb"<offset\b[^>]*>\s*(\d+)\s*</offset>")
_ITEM_START = {
    SPECTRA: re.compile(rb"<spectrum[\s>]"),
    CHROMATOGRAMS: re.compile(rb"<chromatogram[\s>]"),
}
_LIST_END = {SPECTRA: b"</spectrumList>", CHROMATOGRAMS: b"</chromatogramList>"}
_LIST_START = {SPECTRA: b"<spectrumList", CHROMATOGRAMS: b"<chromatogramList"}
_ITEM_TAG = {SPECTRA: b"<spectrum", CHROMATOGRAMS: b"<chromatogram"}
_CLOSED_ROOT = re.compile(rb"</(indexedmzML|mzML)>\s*$")
_ROOT = re.compile(rb"<(indexedmzML|mzML)[\s>]")
_PLURAL = {SPECTRA: "spectra", CHROMATOGRAMS: "chromatograms"}


def _listed_offsets(source: ByteSource, kind: str) -> np.ndarray | None:
    """Item start offsets the ``<indexList>`` lists, or None when there is no index or
    ``<indexListOffset>`` does not point at it."""
    m = _INDEX_LIST_OFFSET.search(source.read(source.size - 4096, source.size))
    if not m:
        return None
    start = int(m.group(1))
    if not source.read(start, start + 10).startswith(b"<indexList"):
        return None  # a stale index (pyteomics' test.mzML, cut from a larger run, has one)
    for name, body in _INDEX.findall(source.read(start, source.size)):
        if name.decode() == kind:
            return np.array([int(o) for o in _OFFSET.findall(body)], dtype=np.int64)
    return None


def _item_offsets(name: str, source: ByteSource, kind: str, header_stop: int) -> np.ndarray:
    """Item start offsets: the index's when every one points at its element, else a scan.

    A coherent index (its ``<indexListOffset>`` right) that lists more items than the
    document holds means items are missing: zero spectra from a file whose index lists some is
    an error, not an empty run."""
    listed = _listed_offsets(source, kind)
    if listed is not None and _points_at(source, listed, _ITEM_TAG[kind]):
        return listed
    starts = _scanned_offsets(source, kind, header_stop)
    if listed is not None and len(starts) < len(listed):
        raise input_error(
            name,
            f"its offset index lists {len(listed):,} {_PLURAL[kind]}, the document holds "
            f"{len(starts):,} (a truncated or broken file)",
        )
    return starts


def _points_at(source: ByteSource, offsets: np.ndarray, tag: bytes) -> bool:
    """Every offset starts the element it claims to (a few bytes read at each); for an
    object in storage, only the items the plan samples, fetched whole."""
    if len(offsets) and (np.any(np.diff(offsets) <= 0) or offsets[-1] >= source.size):
        return False
    n = len(tag)
    if source.remote:  # the sampled items only, fetched whole (a wrong offset elsewhere
        # still fails its partition's parse, naming the file and spectrum)
        positions = sample_positions(len(offsets))
        source.peek_many(_sample_spans(source, offsets, positions))
        offsets = offsets[positions]
    heads = (source.read(o, o + n + 1) for o in offsets.tolist())
    for head in heads:
        if head[:n] != tag or head[n:] not in (b" ", b"\t", b"\r", b"\n", b">"):
            return False
    return True


def _sample_spans(source: ByteSource, offsets: np.ndarray, positions: list[int]) -> list:
    """The byte spans of the sampled items, consecutive ones together (the last item's end
    is not known yet: its span is a read-ahead's worth, which holds the list's end tag), as
    the plan fetches them (:func:`~mzpeak_dask.storage.inputs.sample_spans`)."""
    if not positions:
        return []
    ends = np.append(offsets[1:], min(source.size, int(offsets[-1]) + source.read_ahead))
    spans: list[tuple[int, int]] = []
    for k in positions:
        start, stop = int(offsets[k]), int(ends[k])
        if spans and spans[-1][1] == start:
            spans[-1] = (spans[-1][0], stop)
        else:
            spans.append((start, stop))
    return sample_spans(spans)


def _scanned_offsets(source: ByteSource, kind: str, start: int) -> np.ndarray:
    return np.fromiter(source.starts(_ITEM_START[kind], start), dtype=np.int64)


def _list_end(source: ByteSource, kind: str, after: int) -> int:
    end = source.find(_LIST_END[kind], after)
    return end if end >= 0 else source.size


def _header_stop(source: ByteSource) -> int:
    """Where the run's content starts: the first list start tag, or ``</run>``.

    Each tag is searched only as far as an earlier find, so a large file is not scanned to
    its end when the spectrum list starts near the top."""
    stop = source.size
    for tag in (_LIST_START[SPECTRA], _LIST_START[CHROMATOGRAMS], b"</run>"):
        at = source.find(tag, 0, stop)
        if at >= 0:
            stop = at
    return stop


def _closing(prefix: bytes) -> bytes:
    closing = b"</run></mzML>"
    if b"<indexedmzML" in prefix:
        closing += b"</indexedmzML>"
    return closing


class MzMLFormat(InputFormat):
    name = "mzML"
    file_format = Param("mzML format", V.MZML_FORMAT)

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        return b"<mzML" in head or b"<indexedmzML" in head

    @classmethod
    def survey(cls, path: str, name: str | None = None) -> Survey:
        with ByteSource(path) as source:
            return cls.survey_source(name or path, source)

    @classmethod
    def survey_source(cls, name: str, source: ByteSource) -> Survey:
        """The survey of the document ``source`` holds (``name``: what errors call it)."""
        tail = source.read(source.size - 4096, source.size).rstrip()
        closed = _CLOSED_ROOT.search(tail)
        if not closed:
            raise input_error(name, "the mzML document is truncated (no closing </mzML>)")
        opened = _ROOT.search(source.read(0, 1 << 16))
        if opened is None or opened.group(1) != closed.group(1):
            root = opened.group(1).decode() if opened else "no mzML element"
            raise input_error(
                name,
                f"malformed mzML: the document opens <{root}> but ends with "
                f"</{closed.group(1).decode()}> (content after its root element)",
            )
        header_stop = _header_stop(source)
        prefix = source.read(0, header_stop)
        offsets = {}
        for kind in (SPECTRA, CHROMATOGRAMS):
            starts = _item_offsets(name, source, kind, header_stop)
            end = _list_end(source, kind, int(starts[-1]) if len(starts) else header_stop)
            offsets[kind] = np.append(starts, end).astype(np.int64)
        list_tags = source.read(header_stop, header_stop + 512)
        chrom_start = source.find(_LIST_START[CHROMATOGRAMS], int(offsets[SPECTRA][-1]))
        if chrom_start >= 0:
            list_tags += source.read(chrom_start, chrom_start + 512)
        meta = run_metadata_from_xml(prefix + _closing(prefix), list_tags)
        return Survey(
            spectrum_count=len(offsets[SPECTRA]) - 1,
            chromatogram_count=len(offsets[CHROMATOGRAMS]) - 1,
            run_metadata=meta,
            spectrum_offsets=offsets[SPECTRA],
            chromatogram_offsets=offsets[CHROMATOGRAMS],
            hints={"header_stop": header_stop},
        )

    @classmethod
    def read(
        cls, path: str, items: ItemRange, hints: dict[str, object], name: str | None = None
    ) -> Iterator[SpectrumRecord | ChromatogramRecord]:
        prefix = _prefix(path, int(hints["header_stop"]))
        document = range_document(prefix, items, lambda a, b: read_bytes(path, a, b))
        yield from parser(hints)(document, items.kind, items.start, name or path)


_ITEM_OPEN = {
    SPECTRA: re.compile(rb"<spectrum[\s/>]"),
    CHROMATOGRAMS: re.compile(rb"<chromatogram[\s/>]"),
}


def range_document(prefix: bytes, items: ItemRange, read_bytes) -> bytes:  # noqa: ANN001
    """A self-contained mzML document holding only ``items``.

    The range ends at its last item's own closing tag: what follows it up to the next offset
    is dropped (psims' mzMLb indexes end at the end of the document, so the range of a run's
    last item would take in ``</spectrumList></run></mzML>``)."""
    item_tag = b"chromatogram" if items.kind == CHROMATOGRAMS else b"spectrum"
    list_tag = item_tag + b"List"
    body = read_bytes(items.byte_start, items.byte_stop)
    closed = body.rfind(b"</" + item_tag + b">") + len(item_tag) + 3
    if closed >= len(item_tag) + 3 and not _ITEM_OPEN[items.kind].search(body, closed):
        body = body[:closed]  # (unless an empty element, <spectrum .../>, follows)
    return b"".join(
        [
            prefix,
            b"<",
            list_tag,
            b' count="%d">' % len(items),
            body,
            b"</",
            list_tag,
            b">",
            _closing(prefix),
        ]
    )


@per_file(8)
def _prefix(path: str, header_stop: int) -> bytes:
    """The document header, cached per worker process (and file version)."""
    return read_bytes(path, 0, header_stop)


def parser(hints: dict[str, object]):  # noqa: ANN201 - one of two parse_records functions
    """The mzML parser the conversion asked for (``hints["parser"]``; lean by default)."""
    if hints.get("parser", "lean") == "pyteomics":
        from .mzml_parser import parse_records  # pyteomics is imported only when asked for

        return parse_records
    return parse_lean
