"""File-level metadata of an mzML document (everything before the spectrum list) as the
mzPeak footer JSON (format doc section 4).

The header is small, so it is parsed whole with lxml: the bytes up to ``<spectrumList`` (or
``<chromatogramList``), closed with the end tags the document would have had.
"""

from __future__ import annotations

import re
from typing import Any

from lxml import etree

from ..model.records import Param, RunMetadata
from .param_values import EXPLICIT_TYPES

_COMPONENT_TYPES = {"source": "ionsource", "analyzer": "analyzer", "detector": "detector"}
_LIST_TAG = re.compile(rb"<(spectrumList|chromatogramList)\b([^>]*)>")
_ATTR = re.compile(rb'([\w:]+)\s*=\s*"([^"]*)"')


def _local(tag: Any) -> str:
    return etree.QName(tag).localname if isinstance(tag, str) else ""


class _ParamReader:
    """cvParam / userParam / referenceableParamGroupRef children of an element, as Params."""

    def __init__(self, groups: dict[str, list[Param]]):
        self.groups = groups

    def __call__(self, element: Any) -> list[Param]:
        out: list[Param] = []
        for child in element:
            name = _local(child.tag)
            if name == "cvParam":
                out.append(_cv_param(child))
            elif name == "userParam":
                out.append(_user_param(child))
            elif name == "referenceableParamGroupRef":
                out.extend(self.groups.get(child.get("ref", ""), []))
        return out


def _typed(text: str | None, xsd: str | None = None) -> Any:
    if text is None or text == "":
        return None
    if xsd == "xsd:boolean":
        return text.strip().lower() in ("true", "1")
    declared = EXPLICIT_TYPES.get(xsd) if xsd else None
    for convert in (declared,) if declared else (int, float):  # a declared double: a float
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def _cv_param(e: Any) -> Param:
    return Param(e.get("name"), e.get("accession"), _typed(e.get("value")), e.get("unitAccession"))


def _user_param(e: Any) -> Param:
    return Param(e.get("name"), None, _typed(e.get("value"), e.get("type")), e.get("unitAccession"))


def _children(element: Any, name: str) -> list[Any]:
    return [c for c in element if _local(c.tag) == name] if element is not None else []


def _child(element: Any, name: str) -> Any:
    found = _children(element, name)
    return found[0] if found else None


def _json_params(params: list[Param]) -> list[dict[str, Any]]:
    return [p.to_json() for p in params]


def run_metadata_from_xml(header: bytes, list_tags: bytes = b"") -> RunMetadata:
    """Parse a closed mzML header document into :class:`RunMetadata`; ``list_tags`` holds the
    ``<spectrumList ...>`` / ``<chromatogramList ...>`` start tags (for the default data
    processing)."""
    root = etree.fromstring(header, etree.XMLParser(huge_tree=True, remove_comments=True))
    mzml = root if _local(root.tag) == "mzML" else _child(root, "mzML")
    groups: dict[str, list[Param]] = {}
    params = _ParamReader(groups)
    for group in _children(_child(mzml, "referenceableParamGroupList"), "referenceableParamGroup"):
        groups[group.get("id", "")] = params(group)

    meta = RunMetadata()
    fd = _child(mzml, "fileDescription")
    meta.file_description = {
        "contents": _json_params(params(_child(fd, "fileContent"))) if fd is not None else [],
        "source_files": [
            {
                "id": sf.get("id"),
                "name": sf.get("name"),
                "location": sf.get("location"),
                "parameters": _json_params(params(sf)),
            }
            for sf in _children(_child(fd, "sourceFileList"), "sourceFile")
        ],
    }
    contacts = [{"parameters": _json_params(params(c))} for c in _children(fd, "contact")]
    if contacts:
        meta.file_description["contacts"] = contacts
    meta.sample_list = [
        {"id": s.get("id"), "name": s.get("name"), "parameters": _json_params(params(s))}
        for s in _children(_child(mzml, "sampleList"), "sample")
    ]
    meta.software_list = [
        {"id": s.get("id"), "version": s.get("version"), "parameters": _json_params(params(s))}
        for s in _children(_child(mzml, "softwareList"), "software")
    ]
    meta.data_processing_method_list = [
        {
            "id": dp.get("id"),
            "methods": [
                {
                    "order": _int(m.get("order")),
                    "software_reference": m.get("softwareRef"),
                    "parameters": _json_params(params(m)),
                }
                for m in _children(dp, "processingMethod")
            ],
        }
        for dp in _children(_child(mzml, "dataProcessingList"), "dataProcessing")
    ]
    _instruments(meta, mzml, params)
    _run(meta, mzml, params, list_start_tags(list_tags))
    return meta


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _instruments(meta: RunMetadata, mzml: Any, params: _ParamReader) -> None:
    configs = _children(_child(mzml, "instrumentConfigurationList"), "instrumentConfiguration")
    for number, ic in enumerate(configs):
        meta.instrument_ids[ic.get("id", "")] = number
        components = []
        component_list = _child(ic, "componentList")
        for comp in list(component_list) if component_list is not None else []:
            kind = _COMPONENT_TYPES.get(_local(comp.tag))
            if kind:
                components.append(
                    {
                        "component_type": kind,
                        "order": _int(comp.get("order")),
                        "parameters": _json_params(params(comp)),
                    }
                )
        software = _child(ic, "softwareRef")
        meta.instrument_configuration_list.append(
            {
                "id": number,
                "components": components,
                "parameters": _json_params(params(ic)),
                "software_reference": software.get("ref") if software is not None else None,
                "source_id": ic.get("id"),
            }
        )


def _run(
    meta: RunMetadata, mzml: Any, params: _ParamReader, list_attrs: dict[str, dict[bytes, bytes]]
) -> None:
    run = _child(mzml, "run")
    if run is None:
        return
    spectrum_list = list_attrs.get("spectrumList", {})
    chromatogram_list = list_attrs.get("chromatogramList", {})
    default_dp = spectrum_list.get(b"defaultDataProcessingRef") or chromatogram_list.get(
        b"defaultDataProcessingRef"
    )
    meta.run = {
        "id": run.get("id"),
        "default_data_processing_id": default_dp.decode() if default_dp else None,
        "default_instrument_id": meta.instrument_ids.get(
            run.get("defaultInstrumentConfigurationRef", "")
        ),
        "default_source_file_id": run.get("defaultSourceFileRef"),
        "start_time": run.get("startTimeStamp"),
        "sample_id": run.get("sampleRef"),
        "parameters": _json_params(params(run)),
    }


def list_start_tags(text: bytes) -> dict[str, dict[bytes, bytes]]:
    """Attributes of the ``<spectrumList>`` / ``<chromatogramList>`` start tags in ``text``."""
    return {m.group(1).decode(): dict(_ATTR.findall(m.group(2))) for m in _LIST_TAG.finditer(text)}
