"""MGF input, read straight from its text (:mod:`.mgf_text` parses each block).

Partitions are byte ranges between ``BEGIN IONS`` lines, found by one search of the file's bytes
in fixed-size chunks (linear in the file, bounded memory; an object in storage is searched by
ranged requests the same way), so a worker reads and parses only its own spectra. Spectrum ids
follow the PSI "multiple peak list nativeID format" (``index=N``); the MGF ``TITLE`` is kept as
the spectrum title. Parameters before the first spectrum are file-level metadata, not repeated
on every spectrum — except a file-level ``CHARGE``, the precursor charge of every spectrum that
gives none of its own.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..format import vocabulary as V
from ..model.records import (
    Param,
    PrecursorRecord,
    RunMetadata,
    ScanRecord,
    SignalArray,
    SpectrumRecord,
)
from .base import SHA256_HINT, InputFormat, ItemRange, Survey, input_error, spectrum_error
from .bytesource import CHUNK, ByteSource, read_bytes
from .mgf_text import Block, BlockError, bulk_peaks, parse_block, parse_charges
from .plain_values import selected_ion, signal_arrays, spectrum_params, user_params

_BEGIN = b"BEGIN IONS"
_BEGIN_ANY = re.compile(rb"BEGIN IONS")  # a literal search (fast); lines checked below
_END = re.compile(rb"^[ \t]*END IONS[ \t\r]*$", re.M)
_HANDLED = {"title", "pepmass", "charge", "rtinseconds", "mslevel"}
_COMMENT = ("#", ";", "!", "/")


def _is_line(text: bytes, at: int, base: int) -> bool:
    """Whether ``BEGIN IONS`` at ``text[at:]`` is a line of its own (blanks around it allowed);
    ``base``: the offset of ``text`` in the file (0: ``text`` starts the file)."""
    before = text.rfind(b"\n", 0, at)
    if before < 0 and base > 0:
        return False  # the line starts in the chunk before: cannot be told here
    if text[before + 1 : at].strip(b" \t"):
        return False
    after = text.find(b"\n", at)
    return not text[at + len(_BEGIN) : after if after >= 0 else len(text)].strip()


def begin_offsets(
    source: ByteSource, start: int = 0, stop: int | None = None, digest: Any = None
) -> list[int]:
    """The offsets of the ``BEGIN IONS`` lines in ``[start, stop)``, searched chunk by chunk;
    each chunk is read once (with a little of the next, and the end of the one before kept), so
    a line across a chunk edge is seen whole and an object in storage costs one request a
    chunk. ``digest`` (a hashlib object) is fed the bytes of ``[start, stop)`` in order."""
    stop = source.size if stop is None else stop
    found, position, before, overlap = [], start, b"", 4096
    while position < stop:
        end = min(stop, position + CHUNK)
        data = source.read(position, min(source.size, end + overlap))
        if digest is not None:
            digest.update(memoryview(data)[: end - position])
        text, base = before + data, position - len(before)
        stop_at = len(before) + end - position  # matches that start before the chunk's end
        for m in _BEGIN_ANY.finditer(text, len(before), stop_at + len(_BEGIN)):
            if m.start() < stop_at and _is_line(text, m.start(), base):
                found.append(base + m.start())
        before = data[max(0, end - position - overlap) : end - position]
        position = end
    return found


def _offsets(source: ByteSource, name: str, digest: Any = None) -> np.ndarray:
    starts = begin_offsets(source, digest=digest)
    end = source.size
    if starts:
        last = source.read(starts[-1], source.size)
        last_end = _END.search(last)
        if last_end is None:
            line = _line_of(source, starts[-1])
            raise input_error(
                name,
                f"the MGF file is truncated: its last spectrum ({_title_in(last)}, line {line})"
                " has no END IONS",
            )
        newline = last.find(b"\n", last_end.end())
        end = starts[-1] + (newline + 1 if newline >= 0 else len(last))
    return np.array([*starts, end], dtype=np.int64)


def _line_of(source: ByteSource, offset: int) -> int:
    """The line number (from 1) of ``offset``: counted only when an error names it."""
    starts = range(0, offset, CHUNK)
    return 1 + sum(source.read(a, min(offset, a + CHUNK)).count(b"\n") for a in starts)


def _title_in(block: bytes) -> str:
    m = re.search(rb"^[ \t]*TITLE=([^\r\n]*)", block, re.M | re.I)
    return f"TITLE={m.group(1).strip().decode('utf-8', 'replace')}" if m else "no TITLE"


def _spectrum(block: Block, position: int, file_charge: str | None) -> SpectrumRecord:
    p = block.params
    level = int(p.get("mslevel", 2))
    params = spectrum_params(level, ms1=level <= 1, centroid=True)
    if "title" in p:
        params.append(Param.term(V.SPECTRUM_TITLE, p["title"]))
    params += user_params((k.upper(), v) for k, v in p.items() if k not in _HANDLED)
    scan_params = []
    if "rtinseconds" in p:
        scan_params.append(Param.term(V.SCAN_START_TIME, float(p["rtinseconds"]), V.UNIT_SECOND))
    return SpectrumRecord(
        position=position,
        id=f"index={position}",
        params=params,
        scans=[ScanRecord(scan_params)],
        precursors=_precursors(p, file_charge),
        arrays=_arrays(block),
    )


def _precursors(p: dict[str, str], file_charge: str | None) -> list[PrecursorRecord]:
    if "pepmass" not in p:
        return []
    values = p["pepmass"].split()
    if len(values) > 3:
        raise ValueError(f"cannot parse PEPMASS={p['pepmass']}")
    charge_text = values[2] if len(values) == 3 else p.get("charge", file_charge)
    if not values:
        return []
    mz, intensity = float(values[0]), float(values[1]) if len(values) > 1 else None
    charges = parse_charges(charge_text) if charge_text else []
    ion = selected_ion(mz, charges[0] if charges else None, intensity, charges[1:])
    return [PrecursorRecord(selected_ions=[ion])]


def _arrays(block: Block) -> list[SignalArray]:
    out = signal_arrays(block.mz, block.intensity)
    if block.charges is not None:
        out.append(SignalArray(V.CHARGE_ARRAY, "charge array", None, block.charges))
    return out


def _header_params(header: bytes) -> list[tuple[str, str]]:
    """The ``KEY=value`` lines before the first spectrum (comments skipped)."""
    out = []
    for line in header.decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and not line.lstrip().startswith(_COMMENT):
            out.append((key.strip(), value.strip()))
    return out


def _run_metadata(path: str, params: list[tuple[str, str]]) -> RunMetadata:
    meta = RunMetadata()
    meta.file_description["contents"] = [Param.term(V.MSN_SPECTRUM).to_json()]
    listed = [Param(key, None, value).to_json() for key, value in params]
    meta.run = {"id": os.path.basename(path), "parameters": listed}
    return meta


class MGFFormat(InputFormat):
    name = "MGF"
    file_format = Param.term(V.MGF_FORMAT)
    native_id_format = Param.term(V.MULTIPLE_PEAK_LIST_NATIVE_ID)

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        return _BEGIN_ANY.search(head) is not None and not head.lstrip().startswith(b"<")

    @classmethod
    def survey(cls, path: str, name: str | None = None) -> Survey:
        digest = hashlib.sha256()  # the survey reads the whole input: its SHA-256 on the way
        with ByteSource(path) as source:
            offsets = _offsets(source, name or path, digest)
            header = source.read(0, int(offsets[0]))
        params = _header_params(header)
        charge = next((v for k, v in reversed(params) if k.lower() == "charge"), None)
        if charge is not None:
            try:
                parse_charges(charge)
            except ValueError:
                raise input_error(
                    name or path, f"file-level CHARGE={charge}: not a charge"
                ) from None
        return Survey(
            len(offsets) - 1,
            0,
            _run_metadata(path, params),
            spectrum_offsets=offsets,
            hints={"charge": charge, SHA256_HINT: digest.hexdigest()},
        )

    @classmethod
    def read(
        cls, path: str, items: ItemRange, hints: dict[str, object], name: str | None = None
    ) -> Iterator[SpectrumRecord]:
        name = name or path
        raw = read_bytes(path, items.byte_start, items.byte_stop)
        with ByteSource(data=raw) as source:
            starts = begin_offsets(source)
        if len(starts) != len(items):
            raise input_error(
                name,
                f"the MGF file changed while it was read ({len(starts)} "
                f"spectra at bytes {items.byte_start}-{items.byte_stop}, "
                f"not {len(items)})",
            )
        charge = hints.get("charge")
        spans = list(zip(starts, [*starts[1:], len(raw)], strict=True))
        blocks = []
        for k, (a, b) in enumerate(spans):
            try:
                blocks.append(parse_block(raw[a:b], deferred=True))
            except (BlockError, ValueError) as exc:
                raise _block_error(path, name, items, raw, spans[k], k, exc) from None
        bulk_peaks(blocks)
        for k, block in enumerate(blocks):
            try:
                yield _spectrum(block.finish(), items.start + k, charge)
            except (BlockError, ValueError) as exc:
                raise _block_error(path, name, items, raw, spans[k], k, exc) from None


def _block_error(
    path: str,
    name: str,
    items: ItemRange,
    raw: bytes,
    span: tuple[int, int],
    k: int,
    exc: Exception,
) -> Exception:
    """The error of the ``k``-th spectrum of ``items`` (``span``: its bytes in ``raw``),
    naming its title and line."""
    with ByteSource(path) as source:
        line = _line_of(source, items.byte_start + span[0]) + getattr(exc, "line", 0)
    where = f"spectrum index={items.start + k} ({_title_in(raw[span[0] : span[1]])}, line {line})"
    return spectrum_error(name, where, f"malformed MGF: {exc}")
