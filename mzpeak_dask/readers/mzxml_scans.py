"""The lean mzXML parser: lxml ``iterparse`` over a partition's range document (the header,
the partition's scans, the closing tags), one record per ``<scan>``, nested ones included, in
document order (the order of their start tags).

Each scan's attributes and children become the dictionary pyteomics' ``MzXML`` makes of it
(the same typed attributes, the same list-valued children, the same text-only children as
plain strings, the first ``<peaks>`` decoded into its two arrays), which :mod:`.mzxml` turns
into a record: the tables equal those of the pyteomics reader this one replaced. A parent
scan's content precedes its nested scans, which are built and dropped from the tree as they
end, so a parent never holds its children's peaks.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from typing import Any

from lxml import etree

from ..errors import MzPeakDaskError
from ..model.records import SpectrumRecord
from .base import input_error, spectrum_error
from .binary import BinaryDecodeError
from .mzxml_peaks import decode_peaks


def _number(kind: type) -> Callable[[str], Any]:
    return lambda text: kind(text) if text else None


def _flag(text: str) -> bool:
    low = text.lower()
    if low in ("true", "1", "y"):
        return True
    if low in ("false", "0", "n"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


# xs:duration: only hours, minutes and seconds count (as pyteomics reads it)
_DURATION = re.compile(
    r"P(?:\d+\.?\d*Y)?(?:\d+\.?\d*M)?(?:\d+\.?\d*D)?"
    r"(?:T(?:(?P<h>\d+\.?\d*)H)?(?:(?P<m>\d+\.?\d*)M)?(?:(?P<s>\d+\.?\d*)S)?)?"
)


def _minutes(text: str) -> float:
    """A retention time in minutes: an xs:duration, else a plain number taken as it is."""
    if not text.startswith("P"):
        return float(text)
    found = _DURATION.search(text)
    minutes = float(found.group("m") or 0)
    minutes += float(found.group("h") or 0) * 60.0
    minutes += float(found.group("s") or 0) / 60.0
    return minutes


_INT, _FLOAT = _number(int), _number(float)
_SCAN_TYPES: dict[str, Callable[[str], Any]] = {
    **dict.fromkeys(("msLevel", "peaksCount", "msInstrumentID"), _INT),
    **dict.fromkeys(("centroided", "chargeDeconvoluted", "deisotoped"), _flag),
    **dict.fromkeys(
        (
            "basePeakIntensity",
            "basePeakMz",
            "cidGasPressure",
            "collisionEnergy",
            "compensationVoltage",
            "endMz",
            "highMz",
            "ionisationEnergy",
            "lowMz",
            "startMz",
            "totIonCurrent",
        ),
        _FLOAT,
    ),
    "retentionTime": _minutes,
}
_PRECURSOR_TYPES: dict[str, Callable[[str], Any]] = {
    **dict.fromkeys(("precursorIntensity", "windowWideness", "precursorMz"), _FLOAT),
    "precursorCharge": _INT,
}
# children the mzXML schema lets repeat: pyteomics lists them whether they repeat or not
_LISTED = {"dataProcessing", "msInstrument", "parentFile", "plate", "scanOrigin", "spot"}


def _typed(values: dict[str, Any], types: dict[str, Callable[[str], Any]]) -> dict[str, Any]:
    for key, value in values.items():
        convert = types.get(key)
        if convert is not None:
            values[key] = convert(value)
    return values


def _text(element: Any) -> str:
    return element.text.strip() if element.text else ""


def _child_value(element: Any) -> Any:
    """What pyteomics keeps of a child it does not interpret: its text when it has nothing
    else, its name when it has only a ``name`` attribute, else a structure (a dict, which no
    param is made of)."""
    attrs = element.attrib
    if len(element):
        return {}
    if not len(attrs):
        return _text(element) or {}
    if len(attrs) == 1 and "name" in attrs and not _text(element):
        return attrs["name"]
    return {}


def _precursor(element: Any) -> dict[str, Any]:
    info: dict[str, Any] = dict(element.attrib)
    text = _text(element)
    if text:
        info["precursorMz"] = text
    if "precursorMz" not in info:
        raise ValueError("a precursorMz element without a value")
    return _typed(info, _PRECURSOR_TYPES)


def scan_info(element: Any, local: Callable[[Any], str]) -> dict[str, Any]:
    """The dictionary pyteomics makes of a ``<scan>`` element (nested scans left out)."""
    info: dict[str, Any] = dict(element.attrib)
    peaks = None
    for child in element:
        name = local(child.tag)
        if name == "scan" or not name:
            continue
        if name == "peaks":
            peaks = child if peaks is None else peaks
            continue
        if name == "precursorMz":
            info.setdefault(name, []).append(_precursor(child))
        elif name in _LISTED:
            info.setdefault(name, []).append({})
        else:
            info[name] = _child_value(child)
    _typed(info, _SCAN_TYPES)
    if "num" in info:
        info["id"] = info["num"]
    if peaks is not None:
        mz, intensity = decode_peaks(_text(peaks), peaks.attrib, info.get("peaksCount"))
        info["m/z array"], info["intensity array"] = mz, intensity
    return info


def _label(element: Any, position: int) -> str:
    num = element.get("num")
    return f"scan {num}" if num is not None else f"scan {position} (0-based)"


Build = Callable[[dict[str, Any], int], SpectrumRecord]


def parse_scans(
    document: bytes, first_position: int, lead: int, name: str, build: Build
) -> Iterator[SpectrumRecord]:
    """The records of the scans of a range document, in document order: its first ``lead``
    scans (placeholders opening parents the range cuts into) are skipped, the next one is item
    ``first_position`` (errors call the input ``name``; ``build(info, position)`` makes a
    record of pyteomics' dictionary)."""
    events = etree.iterparse(
        io.BytesIO(document),
        events=("start", "end"),
        tag="{*}scan",
        huge_tree=True,
        remove_comments=True,
    )
    opened: list[tuple[int, str]] = []  # each scan open (its number in start order, its name)
    done: dict[int, SpectrumRecord] = {}
    started, last, namespace = 0, "the header", 0
    try:
        for event, element in events:
            if event == "start":
                last = _label(element, first_position + started - lead)
                opened.append((started, last))
                started += 1
                namespace = element.tag.rfind("}") + 1
                continue
            number = opened.pop()[0]
            if number >= lead:
                position = first_position + number - lead
                done[number] = _record(element, position, name, build, namespace)
            _drop(element)
            if not opened:  # an outermost scan ended: it and its nested scans, in order
                yield from (done.pop(k) for k in sorted(done))
    except etree.XMLSyntaxError as exc:
        # a scan cut short swallows what follows it: the outermost scan open (not a
        # placeholder) is the one
        where = next((label for number, label in opened if number >= lead), last)
        raise input_error(name, f"{where}: malformed mzXML ({exc})") from None


def _record(element: Any, position: int, name: str, build: Build, ns: int) -> SpectrumRecord:
    try:
        return build(
            scan_info(element, lambda tag: tag[ns:] if isinstance(tag, str) else ""), position
        )
    except MzPeakDaskError:
        raise
    except BinaryDecodeError as exc:
        raise spectrum_error(name, _label(element, position), str(exc)) from None
    except (ValueError, TypeError, KeyError, OverflowError) as exc:
        item = _label(element, position)
        raise spectrum_error(name, item, f"malformed mzXML ({exc})") from None


def _drop(element: Any) -> None:
    """Free a scan built: its content, and the scans before it in the same parent."""
    element.clear(keep_tail=True)
    parent = element.getparent()
    if parent is None:
        return
    while element.getprevious() is not None:
        previous = element.getprevious()
        if previous.tag != element.tag:
            break  # a parent's own content (peaks, precursors) is kept until it ends
        parent.remove(previous)
