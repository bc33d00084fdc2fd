"""The lean mzML parser: lxml ``iterparse`` over a partition's range document, building
:class:`SpectrumRecord` / :class:`ChromatogramRecord` straight from the elements.

There is no intermediate dict per element: each spectrum's children are walked once, its params
typed as they are read (:mod:`.param_values`) and its binaryDataArrays handed over undecoded
(:class:`RawArray`) to the same decoder the pyteomics path uses (and so the same errors).

The records equal those of ``--parser pyteomics`` (:mod:`.mzml_parser`), quirks included:
params of one element that share a name are listed together at the first one's place, with the
first one's accession and unit (pyteomics files them under one dict key). A param named as one
of its element's attributes or child elements is kept (pyteomics files it under that key: the
spectrum's id, or its scans, become a list, or the parse fails). referenceableParamGroupRefs
are resolved from the document's header (every range document starts with it).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from lxml import etree

from ..errors import MzPeakDaskError
from ..model.records import (
    ChromatogramRecord,
    Param,
    PrecursorRecord,
    ScanRecord,
    SelectedIonRecord,
    SignalArray,
    SpectrumRecord,
)
from .base import CHROMATOGRAMS, input_error, spectrum_error
from .binary import FetchExternal, RawArray, decode_arrays
from .param_values import typed_value, unit_of

_EXTERNAL_DATASET = ("external HDF5 dataset", "external dataset")
_MS_LEVEL = "ms level"
_EXTERNAL = frozenset({*_EXTERNAL_DATASET, "external offset", "external array length"})

# a param as read: (name, accession, value, unit); a group's params are merged by name already
# and may carry a list of values (pyteomics inserts such a list as one value)
Raw = tuple[str, str | None, Any, str | None]


class _Walker:
    """Reads the params and sub-elements of one document's elements (one namespace).

    Most params repeat from spectrum to spectrum with the same attributes ("ms level" 1, the
    array types, "zlib compression"...): a param element is read once per distinct set of
    attributes in the document, its (immutable) :class:`Param` reused after that, beside the
    Param pyteomics gives where an "ms level" is made an int (:func:`_int_ms_level`)."""

    def __init__(self, ns: str):
        self.ns = ns
        self.cv, self.user = ns + "cvParam", ns + "userParam"
        self.ref = ns + "referenceableParamGroupRef"
        self.groups: dict[str, list[Raw]] = {}
        # attributes -> the param they make: as read, and with an "ms level" made an int
        self.read: dict[tuple, tuple[Raw, Param, Param]] = {}

    def local(self, tag: Any) -> str:
        return tag[len(self.ns) :] if isinstance(tag, str) else ""

    def _param(self, child: Any, key: tuple) -> tuple[Raw, Param, Param]:
        a = child.attrib
        name = a.get("name")
        if name is None:
            raise ValueError(f"a {self.local(child.tag)} without a name")
        raw = (name, a.get("accession"), typed_value(a), unit_of(a))
        param = Param(*raw)
        level = param
        if name == _MS_LEVEL and type(param.value) is not int:
            level = _int_ms_level(param)
        found = self.read[key] = (raw, param, level)
        return found

    def walk(
        self, element: Any, int_ms_level: bool = True
    ) -> tuple[list[Param], dict[str, list[Any]]]:
        """The element's params (pyteomics' merge applied) and its other children by name."""
        raw: list[Raw] = []
        params: list[Param] = []
        children: dict[str, list[Any]] = {}
        grouped = False
        cv, user, read = self.cv, self.user, self.read
        chosen = 2 if int_ms_level else 1  # the param with its "ms level" made an int, or not
        for child in element:
            tag = child.tag
            if tag == cv or tag == user:
                key = tuple(child.items())
                found = read.get(key) or self._param(child, key)
                raw.append(found[0])
                params.append(found[chosen])
            elif tag == self.ref:
                raw.extend(self.groups.get(child.get("ref", ""), ()))
                grouped = True
            else:
                children.setdefault(self.local(tag), []).append(child)
        if grouped or len({p.name for p in params}) != len(params):
            return _merged(raw, grouped, int_ms_level), children
        return params, children

    def group(self, element: Any) -> None:
        params, _ = self.walk(element)
        merged: dict[str, list[Any]] = {}
        for p in params:
            merged.setdefault(p.name, [p.name, p.accession, [], p.unit])[2].append(p.value)
        self.groups[element.get("id", "")] = [
            (n, a, v[0] if len(v) == 1 else v, u) for n, a, v, u in merged.values()
        ]

    def params(self, element: Any | None) -> list[Param]:
        return self.walk(element)[0] if element is not None else []


def _merged(raw: list[Raw], grouped: bool, int_ms_level: bool) -> list[Param]:
    """pyteomics' dict of params: one entry per name (the first one's accession and unit) at
    its first place. ``grouped``: ``raw`` holds a group's params (whose values may be lists)."""
    names = {r[0] for r in raw}
    if len(names) == len(raw) and not (grouped and any(isinstance(r[2], list) for r in raw)):
        out = [Param(n, a, v, u) for n, a, v, u in raw]
    else:
        # name -> [accession, unit, values, whether pyteomics holds a list]; a group's list
        # is the entry itself when it comes first, one (joined) value when it comes later
        merged: dict[str, list[Any]] = {}
        for name, accession, value, unit in raw:
            entry = merged.get(name)
            if entry is None:
                listed = isinstance(value, list)
                merged[name] = [accession, unit, list(value) if listed else [value], listed]
            else:
                entry[2].append(value)
                entry[3] = True
        out = []
        for name, (accession, unit, values, listed) in merged.items():
            if listed:
                names.discard(name)  # pyteomics leaves a list of "ms level" values as it is
            out.extend(Param(name, accession, _plain(v), unit) for v in values)
    if int_ms_level and _MS_LEVEL in names:
        out = [_int_ms_level(p) if p.name == _MS_LEVEL else p for p in out]
    return out


def _int_ms_level(param: Param) -> Param:
    """pyteomics makes any single "ms level" value (a userParam's float too) an int."""
    try:
        return Param(param.name, param.accession, int(param.value), param.unit)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return param


def _plain(value: Any) -> Any:
    return " ".join(str(v) for v in value) if isinstance(value, list) else value


def _last(children: dict[str, list[Any]], name: str) -> Any | None:
    found = children.get(name)
    return found[-1] if found else None


def _all(walker: _Walker, children: dict[str, list[Any]], outer: str, inner: str) -> list[Any]:
    """The ``inner`` elements of the (last) ``outer`` child: a list element's items."""
    block = _last(children, outer)
    if block is None:
        return []
    tag = walker.ns + inner
    return [c for c in block if c.tag == tag]


def _raw_arrays(walker: _Walker, children: dict[str, list[Any]]) -> list[RawArray]:
    out = []
    for element in _all(walker, children, "binaryDataArrayList", "binaryDataArray"):
        params, parts = walker.walk(element, int_ms_level=False)
        by_name = {p.name: p.value for p in params if p.name in _EXTERNAL}
        external = None
        dataset = next((by_name[k] for k in _EXTERNAL_DATASET if k in by_name), None)
        if dataset is not None:
            offset, length = by_name["external offset"], by_name["external array length"]
            external = (str(dataset), int(offset), int(length))
        binary = _last(parts, "binary")
        text = binary.text.strip() if binary is not None and binary.text else None
        declared = element.get("arrayLength")
        out.append(
            RawArray(
                declared_length=int(declared) if declared is not None else None,
                params=[p for p in params if p.name not in _EXTERNAL],
                payload=text or None,
                external=external,
                data_processing_ref=element.get("dataProcessingRef"),
            )
        )
    return out


def _precursor(walker: _Walker, element: Any) -> PrecursorRecord:
    params, parts = walker.walk(element)
    ions = [
        SelectedIonRecord(walker.params(ion))
        for ion in _all(walker, parts, "selectedIonList", "selectedIon")
    ]
    return PrecursorRecord(
        spectrum_ref=element.get("spectrumRef"),
        isolation_window=walker.params(_last(parts, "isolationWindow")),
        activation=walker.params(_last(parts, "activation")),
        selected_ions=ions,
        params=params,
    )


def _scans(walker: _Walker, children: dict[str, list[Any]]) -> tuple[list[ScanRecord], list]:
    scan_list = _last(children, "scanList")
    if scan_list is None:
        return [], []
    list_params, parts = walker.walk(scan_list)
    scans = []
    for scan in parts.get("scan", []):
        params, scan_parts = walker.walk(scan)
        windows = [
            walker.params(w) for w in _all(walker, scan_parts, "scanWindowList", "scanWindow")
        ]
        scans.append(ScanRecord(params, scan.get("instrumentConfigurationRef"), windows))
    return scans, list_params


def _default_length(element: Any) -> int | None:
    text = element.get("defaultArrayLength")
    return int(text) if text is not None else None


def _item(
    walker: _Walker, element: Any, kind: str, position: int, name: str, fetch: FetchExternal
) -> tuple[str, list[Param], dict[str, list[Any]], list[SignalArray]]:
    """A spectrum's or chromatogram's id (its position when it has none), params, other
    children and decoded arrays (decoding errors name it ``{kind} {id}``)."""
    found = element.get("id")
    ident = str(found if found is not None else position)
    params, children = walker.walk(element)
    arrays = decode_arrays(
        _raw_arrays(walker, children), _default_length(element), name, f"{kind} {ident}", fetch
    )
    return ident, params, children, arrays


def spectrum_record(
    walker: _Walker, element: Any, position: int, name: str, fetch: FetchExternal
) -> SpectrumRecord:
    ident, params, children, arrays = _item(walker, element, "spectrum", position, name, fetch)
    scans, scan_list_params = _scans(walker, children)
    precursors = [
        _precursor(walker, p) for p in _all(walker, children, "precursorList", "precursor")
    ]
    return SpectrumRecord(
        position=position,
        id=ident,
        params=params + scan_list_params,
        scans=scans,
        precursors=precursors,
        arrays=arrays,
        data_processing_ref=element.get("dataProcessingRef"),
    )


def chromatogram_record(
    walker: _Walker, element: Any, position: int, name: str, fetch: FetchExternal
) -> ChromatogramRecord:
    ident, params, children, arrays = _item(walker, element, "chromatogram", position, name, fetch)
    products = children.get("product", [])
    product = (
        walker.params(_last(walker.walk(products[0])[1], "isolationWindow")) if products else []
    )
    return ChromatogramRecord(
        position=position,
        id=ident,
        params=params,
        precursors=[_precursor(walker, p) for p in children.get("precursor", [])],
        product=product,
        arrays=arrays,
        data_processing_ref=element.get("dataProcessingRef"),
    )


def parse_records(
    document: bytes, kind: str, first_position: int, name: str, fetch: FetchExternal = None
) -> Iterator[SpectrumRecord | ChromatogramRecord]:
    """Parse a self-contained mzML document and yield its spectra or chromatograms (errors
    call the input ``name``, as the user named it)."""
    tag = "chromatogram" if kind == CHROMATOGRAMS else "spectrum"
    build = chromatogram_record if kind == CHROMATOGRAMS else spectrum_record
    position = first_position
    walker: _Walker | None = None
    events = etree.iterparse(
        io.BytesIO(document),
        events=("end",),
        tag=("{*}referenceableParamGroup", "{*}" + tag),
        huge_tree=True,
        remove_comments=True,
    )
    try:
        for _, element in events:
            local = element.tag.rpartition("}")[2]
            if walker is None:
                walker = _Walker(element.tag[: len(element.tag) - len(local)])
            if local == "referenceableParamGroup":
                walker.group(element)
                continue
            try:
                record = build(walker, element, position, name, fetch)
            except MzPeakDaskError:
                raise
            except ValueError as exc:  # an attribute or a param that does not parse
                ident = element.get("id", position)
                raise spectrum_error(name, f"{tag} {ident}", f"malformed mzML ({exc})") from None
            element.clear(keep_tail=True)
            while element.getprevious() is not None:
                del element.getparent()[0]
            yield record
            position += 1
    except etree.XMLSyntaxError as exc:
        raise input_error(name, f"malformed XML in {tag} {position} (0-based): {exc}") from None
