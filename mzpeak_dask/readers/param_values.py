"""The value of an mzML cvParam or userParam, typed as the pyteomics mzML path types it.

The two mzML parsers (the lean one and ``--parser pyteomics``) must give every param the same
value, so the rule is pyteomics' rule, written down once:

- a ``type`` attribute of ``int``, ``float`` or ``string``, or an XML Schema type
  (``xsd:double``, ``xsd:integer``, ``xsd:string``, ...: what userParams declare), picks that
  type, so a declared ``xsd:double`` of ``0`` is the float 0.0 and a declared ``xsd:long`` an
  int (pyteomics knows only the first three; the pyteomics parser is taught the rest,
  :class:`~mzpeak_dask.readers.mzml_parser.RecordMzML`);
- else a PSI-MS term (``cvRef`` ``MS`` or ``PSI-MS``) with a ``has value type`` relation to an
  XML Schema integer, decimal or text type is typed so;
- else the value is read as a float;
- a value that does not convert stays text, and an empty value is no value.

Units: the ``unitAccession`` when the param names a unit CV or a unit name (pyteomics ignores
a bare ``unitAccession``). pyteomics caches a term's type on its first sighting, even one
without a value; here the type depends on the term alone, so it never depends on which file
was read first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..format import cv
from ..model.records import Value

_XSD: dict[str, Callable[[str], Any]] = {}
for _kind, _names in (
    (int, ("xsd:integer", "xsd:int", "xsd:nonNegativeInteger", "xsd:positiveInteger")),
    (float, ("xsd:float", "xsd:double", "xsd:decimal")),
    (str, ("xsd:string", "xsd:anyURI", "xsd:boolean", "xsd:dateTime")),
):
    for _name in _names:
        _XSD[_name] = _kind
# a type attribute: pyteomics' three names, and XML Schema's (the CV's, plus the other
# integer types a userParam may declare)
_INTEGERS = ("long", "short", "byte", "negativeInteger", "nonPositiveInteger")
_UNSIGNED = ("unsignedLong", "unsignedInt", "unsignedShort", "unsignedByte")
EXPLICIT_TYPES: dict[str, Callable[[str], Any]] = {
    "int": int,
    "float": float,
    "string": str,
    **_XSD,
    **{f"xsd:{name}": int for name in _INTEGERS + _UNSIGNED},
}
_EXPLICIT = EXPLICIT_TYPES
_PSI_MS = frozenset({"MS", "PSI-MS"})
_TYPES: dict[str | None, Callable[[str], Any]] = {}


def _term_type(accession: str) -> Callable[[str], Any]:
    for name in cv.value_types().get(accession, ()):
        kind = _XSD.get(name)
        if kind is not None:
            return kind
    return float


def value_type(accession: str | None, cv_ref: str | None) -> Callable[[str], Any]:
    """How a value of the term ``accession`` (from the CV ``cv_ref``) is read."""
    if accession is None or cv_ref not in _PSI_MS:
        return float
    kind = _TYPES.get(accession)
    if kind is None:
        kind = _TYPES[accession] = _term_type(accession)
    return kind


def typed_value(attrib: Any) -> Value:
    """The value of a cvParam/userParam element from its attributes (None when empty)."""
    text = attrib.get("value")
    if not text:
        return None
    explicit = attrib.get("type")
    if explicit is not None and explicit in _EXPLICIT:
        kind = _EXPLICIT[explicit]
    elif attrib.get("cvRef") in _PSI_MS:
        accession = attrib.get("accession")
        kind = _TYPES.get(accession) or value_type(accession, "MS")
    else:
        kind = float
    try:
        return kind(text)
    except ValueError:
        return text


def unit_of(attrib: Any) -> str | None:
    """The param's unit accession, when it names a unit CV or a unit name."""
    if "unitCvRef" in attrib or "unitName" in attrib:
        return attrib.get("unitAccession")
    return None
