"""One MGF spectrum block (``BEGIN IONS`` … ``END IONS``) parsed straight from its bytes.

Parameters are ``KEY=value`` lines (the key matched without case, the value stripped; a title
may hold ``=`` itself); lines starting ``#``, ``;``, ``!`` or ``/`` are comments; blank lines
and Windows line ends are allowed anywhere. Every other line is a peak: m/z, intensity and
optionally a third column (a fragment charge such as ``2``, ``2+`` or ``1-``; anything else is
an annotation, not kept). The plain peak lines (two numbers) of a whole partition are converted
in one call (:func:`bulk_peaks`); any other block's in one numpy call (lines of two or three
plain numbers) or, when lines differ in width or hold signs and annotations, column by column
from the block's tokens — never point by point in Python.

A malformed block raises :class:`BlockError` with the line (counted from the block's first
line) where it went wrong; the reader adds the file and the spectrum.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..support.arrow_build import to_numpy

_END = re.compile(rb"^[ \t]*END IONS[ \t\r]*$", re.M)
_PEAK_START = re.compile(rb"^[ \t]*[-+.0-9]", re.M)  # the first line that can be a peak
_ODD = tuple(bytes([c]) for c in b"=#;!/")  # a parameter or a comment among the peak lines
_META_LINE = re.compile(rb"^[ \t]*(?:[#;!/][^\n]*|[^\n=]*=[^\n]*)(?:\n|$)", re.M)
_CHARGE_SPLIT = re.compile(r"(?:,\s*)|(?:\s*and\s*)")
_SIGNED = re.compile(r"^(\d+)([+-])$")
_COMMENT = tuple(b"#;!/")
BULK_PEAKS = True  # off only to measure what it gains (tests/benchmarks/bench_mgf.py)


class BlockError(ValueError):
    """A malformed block: what is wrong, and the line of the block (0 = ``BEGIN IONS``)."""

    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


@dataclass(slots=True)
class Block:
    """What a block holds: its parameters (lower-case keys, in first-seen order, as strings)
    and its peaks (``charges`` when a third column holds fragment charges)."""

    params: dict[str, str] = field(default_factory=dict)
    mz: np.ndarray | None = None
    intensity: np.ndarray | None = None
    charges: np.ndarray | None = None
    text: bytes = b""  # peak lines not converted yet (``deferred``), and the first one's line
    line: int = 0

    def finish(self) -> Block:
        """The peaks converted, if :func:`bulk_peaks` has not."""
        if self.mz is None:
            self.mz, self.intensity, self.charges = _peaks(self.text, self.line)
            self.text = b""
        return self


def parse_block(block: bytes, deferred: bool = False) -> Block:
    """Parse one block, from its ``BEGIN IONS`` line to (at most) the next block's start;
    ``deferred``: plain peak lines are left for :func:`bulk_peaks` (then :meth:`Block.finish`)."""
    end = _end_line(block)
    if end < 0:
        raise BlockError("no END IONS before the next BEGIN IONS or the end of the file", 0)
    first = block.find(b"\n") + 1
    body = block[first:end] if 0 < first <= end else b""
    out = Block()
    peak = _PEAK_START.search(body)
    split = peak.start() if peak else len(body)
    _read_params(body[:split], out.params, 1)
    peaks = body[split:]
    line = 1 + body.count(b"\n", 0, split)
    # one literal search a character: a character class over the peak lines took half the
    # reader's time (bench_mgf)
    if any(c in peaks for c in _ODD):  # parameters or comments after the first peak (rare)
        for m in _META_LINE.finditer(peaks):
            _read_params(m.group(), out.params, line + peaks.count(b"\n", 0, m.start()))
        # each such line left blank, so that a bad peak's line is still counted as written
        peaks = _META_LINE.sub(lambda m: b"\n" if m.group().endswith(b"\n") else b"", peaks)
    elif deferred and peaks.endswith(b"\n"):
        out.text, out.line = peaks, line
        return out
    out.mz, out.intensity, out.charges = _peaks(peaks, line)
    return out


def bulk_peaks(blocks: list[Block]) -> None:
    """Convert the deferred peak lines of ``blocks`` in one call (pyarrow's CSV parser, about
    three times numpy's text parser's speed; tests/benchmarks/bench_mgf.py prints the reader
    with and without it): done when every line holds two numbers separated by one tab or one
    space, else left to each block's :meth:`Block.finish` (which names a bad line)."""
    waiting = [b for b in blocks if b.mz is None and b.text]
    if not waiting or not BULK_PEAKS:
        return
    text = b"".join(b.text for b in waiting)
    first = text[: text.find(b"\n")]
    delimiter = "\t" if b"\t" in first else " "
    rows = np.array([b.text.count(b"\n") for b in waiting], dtype=np.int64)
    pairs = _pairs(text, delimiter)
    if pairs is None or len(pairs[0]) != int(rows.sum()):
        return
    ends = np.cumsum(rows)
    for block, a, b in zip(waiting, ends - rows, ends, strict=True):
        block.mz, block.intensity, block.text = pairs[0][a:b], pairs[1][a:b], b""


def _pairs(text: bytes, delimiter: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Lines of two numbers (blank lines skipped) as two float64 arrays; None when a line holds
    anything else (other widths, other separators, text, or a value pyarrow reads as null)."""
    import pyarrow as pa
    import pyarrow.csv as csv  # imported when an MGF is read

    names = ["mz", "intensity"]
    try:
        table = csv.read_csv(
            pa.BufferReader(text),
            read_options=csv.ReadOptions(column_names=names, use_threads=False),
            parse_options=csv.ParseOptions(delimiter=delimiter, quote_char=False),
            convert_options=csv.ConvertOptions(column_types=dict.fromkeys(names, pa.float64())),
        )
    except (ValueError, OSError):  # pyarrow.ArrowInvalid: not plain pairs
        return None
    if any(table.column(n).null_count for n in names):  # "NaN", "NA", ...: numpy reads them
        return None
    # read from the buffers: ChunkedArray.to_numpy imports pandas (0.25 s of CPU in each
    # process that reads an MGF; bench_mgf)
    return to_numpy(table.column("mz")), to_numpy(table.column("intensity"))


def _end_line(block: bytes) -> int:
    """Where the block's ``END IONS`` line starts, or -1 (a literal search from the end, the
    line checked; the pattern over the whole block only when that finds something else)."""
    at = block.rfind(b"END IONS")
    if at >= 0:
        start = block.rfind(b"\n", 0, at) + 1
        stop = block.find(b"\n", at)
        line = block[start : stop if stop >= 0 else len(block)]
        if line.strip() == b"END IONS":
            return start
    found = None
    for found in _END.finditer(block):  # noqa: B007 - the last one
        pass
    return found.start() if found else -1


def _read_params(text: bytes, params: dict[str, str], line: int) -> None:
    for k, raw in enumerate(text.split(b"\n")):
        stripped = raw.strip()
        if not stripped or stripped[0] in _COMMENT:
            continue
        key, sep, value = stripped.partition(b"=")
        if not sep:
            raise BlockError(f"not a number: {_shown(stripped)}", line + k)
        params[key.decode("utf-8", "replace").lower()] = value.strip().decode("utf-8", "replace")


def _peaks(text: bytes, line: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """m/z, intensity and fragment charges (or None) of peak lines; ``line``: the first one's
    line in the block."""
    rows = text.count(b"\n") + (0 if text.endswith(b"\n") or not text else 1)
    try:
        values = np.fromstring(text, sep=" ") if text else np.empty(0)
    except ValueError:
        values = None  # signed charges, annotations or a bad value: column by column
    if values is not None:
        if len(values) == 2 * rows:
            pairs = values.reshape(-1, 2)
            return pairs[:, 0].copy(), pairs[:, 1].copy(), None
        if len(values) == 3 * rows:
            triples = values.reshape(-1, 3)
            charges = _integral(triples[:, 2])
            return triples[:, 0].copy(), triples[:, 1].copy(), _kept(charges)
    return _columns(text, line)


def _columns(text: bytes, line: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The general case: lines of varying width (blank ones too), signed charges, annotations."""
    raw = np.frombuffer(text, dtype=np.uint8)
    space = raw <= 32
    starts = ~space
    starts[1:] &= space[:-1]
    token_line = np.cumsum(raw == 10)[starts]  # the line of each token
    first = np.searchsorted(token_line, token_line, side="left")
    column = np.arange(len(token_line)) - first
    width = np.bincount(token_line, minlength=1)
    lonely = np.flatnonzero(width == 1)
    if len(lonely):
        raise BlockError(
            "a peak line with one value (m/z and intensity expected)", line + lonely[0]
        )
    tokens = np.array(text.split(), dtype=np.bytes_)
    mz = _floats(tokens[column == 0], token_line[column == 0], line)
    intensity = _floats(tokens[column == 1], token_line[column == 1], line)
    third = column == 2
    if not third.any():
        return mz, intensity, None
    peak_of_line = np.cumsum(width > 0) - 1  # the peak each line holds
    charges = np.zeros(len(mz), dtype=np.int64)
    parsed = _charge_column(tokens[third])
    if parsed is None:  # annotations, not charges
        return mz, intensity, None
    charges[peak_of_line[token_line[third]]] = parsed
    return mz, intensity, _kept(charges)


def _floats(tokens: np.ndarray, lines: np.ndarray, line: int) -> np.ndarray:
    try:
        return tokens.astype(np.float64)
    except ValueError:
        for k, token in enumerate(tokens):  # the error's line: only when there is an error
            try:
                float(token)
            except ValueError:
                raise BlockError(f"not a number: {_shown(token)}", line + int(lines[k])) from None
        raise


def _charge_column(tokens: np.ndarray) -> np.ndarray | None:
    """Fragment charges written ``2``, ``+2``, ``2+`` or ``1-``; None when the column holds
    anything else (an annotation)."""
    negative = np.strings.endswith(tokens, b"-")
    digits = np.strings.rstrip(tokens, b"+-")
    try:
        values = digits.astype(np.int64)
    except ValueError:
        try:
            values = _integral(digits.astype(np.float64))
        except ValueError:
            return None
        if values is None:
            return None
    return np.where(negative, -values, values)


def _integral(values: np.ndarray) -> np.ndarray | None:
    if not np.all(np.isfinite(values)) or not np.all(values == np.round(values)):
        return None
    return values.astype(np.int64)


def _kept(charges: np.ndarray | None) -> np.ndarray | None:
    """A charge column is kept when it holds a charge (zeros alone mean none)."""
    return charges if charges is not None and np.count_nonzero(charges) else None


def parse_charges(text: str) -> list[int]:
    """A precursor charge list: ``2+``, ``2+ and 3+``, ``2+, 3+``, ``-1``, ``3``."""
    return [_charge(part) for part in _CHARGE_SPLIT.split(text)]


def _charge(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        pass
    signed = _SIGNED.match(text)
    if signed:
        return int(signed.group(2) + signed.group(1))
    value = float(text)  # ValueError: not a charge
    if not value.is_integer():
        raise ValueError(f"not a charge: {text!r}")
    return int(value)


def _shown(token: bytes) -> str:
    text = token.decode("utf-8", "replace")
    return repr(text if len(text) <= 40 else text[:40] + "…")
