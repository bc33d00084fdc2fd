"""mzXML input, read by byte ranges with the lean parser (:mod:`.mzxml_ranges`,
:mod:`.mzxml_scans`), a local file and an object in storage alike.

mzXML has attributes instead of CV terms; they are translated into the PSI-MS terms mzML would
use (``msLevel`` -> ``MS:1000511``, ``retentionTime`` -> scan start time in minutes, ...).
Nested scans are flattened in document order. The parser hands over each scan as the
dictionary pyteomics' ``MzXML`` makes of it (the reader this one replaced, which the tests keep
as the reference), and the records are made of it here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import numpy as np
from lxml import etree

from ..format import cv
from ..format import vocabulary as V
from ..model.records import (
    Param,
    PrecursorRecord,
    RunMetadata,
    ScanRecord,
    SpectrumRecord,
)
from . import mzxml_ranges
from .base import SPECTRA, InputFormat, ItemRange, Survey
from .plain_values import selected_ion, signal_arrays, spectrum_params, user_params

_DISSOCIATION = {name: accession for accession, name in V.DISSOCIATION_METHODS.items()}
_ACTIVATION = {  # mzXML activationMethod -> dissociation method
    "CID": _DISSOCIATION["collision-induced dissociation"],
    "HCD": _DISSOCIATION["beam-type collision-induced dissociation"],
    "ETD": _DISSOCIATION["electron transfer dissociation"],
    "ECD": _DISSOCIATION["electron capture dissociation"],
    "PQD": _DISSOCIATION["pulsed q dissociation"],
}
_VALUES = [  # mzXML scan attribute -> (accession, unit)
    ("lowMz", V.LOWEST_OBSERVED_MZ, V.UNIT_MZ),
    ("highMz", V.HIGHEST_OBSERVED_MZ, V.UNIT_MZ),
    ("basePeakMz", V.BASE_PEAK_MZ, V.UNIT_MZ),
    ("basePeakIntensity", V.BASE_PEAK_INTENSITY, V.UNIT_DETECTOR_COUNTS),
    ("totIonCurrent", V.TOTAL_ION_CURRENT, V.UNIT_DETECTOR_COUNTS),
]
_HANDLED = {
    "num",
    "id",
    "msLevel",
    "centroided",
    "polarity",
    "retentionTime",
    "peaksCount",
    "msInstrumentID",
    "precursorMz",
    "collisionEnergy",
    "filterLine",
    "startMz",
    "endMz",
    "scan",
    "m/z array",
    "intensity array",
    *(v[0] for v in _VALUES),
}


def _spectrum(info: dict[str, Any], position: int) -> SpectrumRecord:
    level = int(info.get("msLevel", 1))
    params = spectrum_params(
        level, ms1=level == 1, centroid=info.get("centroided"), polarity=info.get("polarity")
    )
    for key, accession, unit in _VALUES:
        if key in info:
            params.append(Param.term(accession, float(info[key]), unit))
    params += user_params(
        (k, v)
        for k, v in info.items()
        if k not in _HANDLED and not isinstance(v, (dict, list, np.ndarray))
    )
    return SpectrumRecord(
        position=position,
        id=str(info.get("id", info.get("num", position))),
        params=params,
        scans=[_scan(info)],
        precursors=[_precursor(p, info) for p in info.get("precursorMz", [])],
        arrays=signal_arrays(info.get("m/z array"), info.get("intensity array")),
    )


def _scan(info: dict[str, Any]) -> ScanRecord:
    params = []
    if "retentionTime" in info:
        minutes = float(info["retentionTime"])
        params.append(Param.term(V.SCAN_START_TIME, minutes, V.UNIT_MINUTE))
    if "filterLine" in info:
        params.append(Param.term(V.FILTER_STRING, str(info["filterLine"])))
    windows = []
    if "startMz" in info and "endMz" in info:
        low, high = float(info["startMz"]), float(info["endMz"])
        windows.append(
            [
                Param.term(V.SCAN_WINDOW_LOWER_LIMIT, low, V.UNIT_MZ),
                Param.term(V.SCAN_WINDOW_UPPER_LIMIT, high, V.UNIT_MZ),
            ]
        )
    instrument = info.get("msInstrumentID")
    return ScanRecord(params, str(instrument) if instrument is not None else None, windows)


def _precursor(p: dict[str, Any], info: dict[str, Any]) -> PrecursorRecord:
    mz = float(p["precursorMz"])
    ion = selected_ion(mz, p.get("precursorCharge"), p.get("precursorIntensity"))
    window = [Param.term(V.ISOLATION_WINDOW_TARGET_MZ, mz, V.UNIT_MZ)]
    if p.get("windowWideness") is not None:
        half = float(p["windowWideness"]) / 2
        window += [
            Param.term(V.ISOLATION_WINDOW_LOWER_OFFSET, half, V.UNIT_MZ),
            Param.term(V.ISOLATION_WINDOW_UPPER_OFFSET, half, V.UNIT_MZ),
        ]
    activation = []
    method = p.get("activationMethod")
    if method:
        accession = _ACTIVATION.get(str(method).upper())
        activation.append(Param.term(accession) if accession else Param(str(method)))
    if info.get("collisionEnergy") is not None:
        energy = float(info["collisionEnergy"])
        activation.append(Param.term(V.COLLISION_ENERGY, energy, V.UNIT_ELECTRONVOLT))
    ref = p.get("precursorScanNum")
    return PrecursorRecord(str(ref) if ref is not None else None, window, activation, [ion])


class MzXMLFormat(InputFormat):
    name = "mzXML"
    file_format = Param.term(V.MZXML_FORMAT)
    native_id_format = Param.term(V.SCAN_NUMBER_ONLY_NATIVE_ID)

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        return b"<mzXML" in head or b"<msRun" in head

    @classmethod
    def survey(cls, path: str, name: str | None = None) -> Survey:
        return mzxml_ranges.survey(path, name or path, _metadata_from)

    @classmethod
    def read(
        cls, path: str, items: ItemRange, hints: dict[str, object], name: str | None = None
    ) -> Iterator[SpectrumRecord]:
        yield from mzxml_ranges.read_records(path, items, hints, name or path, _spectrum)


_HEADER_END = re.compile(rb"<scan[\s>]")


def _metadata_from(head: bytes) -> RunMetadata:
    """The run's metadata from the document's first bytes."""
    m = _HEADER_END.search(head)
    text = head[: m.start()] if m else head
    parser = etree.XMLParser(recover=True, huge_tree=True)
    root = etree.fromstring(text + b"</msRun></mzXML>", parser)
    meta = RunMetadata()
    if root is None:
        return meta
    for number, inst in enumerate(root.iter("{*}msInstrument")):
        meta.instrument_ids[inst.get("msInstrumentID", str(number + 1))] = number
        params = [
            _named_param(child.get("category") or etree.QName(child).localname, child.get("value"))
            for child in inst
            if child.get("value")
        ]
        meta.instrument_configuration_list.append(
            {"id": number, "components": [], "parameters": params, "software_reference": None}
        )
    for number, sw in enumerate(root.iter("{*}software")):
        meta.software_list.append(
            {
                "id": f"software_{number}",
                "version": sw.get("version"),
                "parameters": [_named_param("software", sw.get("name"))],
            }
        )
    meta.file_description["source_files"] = [
        {
            "id": f"parent_{n}",
            "name": pf.get("fileName"),
            "location": None,
            "parameters": [Param.term(V.SHA1, pf.get("fileSha1")).to_json()]
            if pf.get("fileSha1")
            else [],
        }
        for n, pf in enumerate(root.iter("{*}parentFile"))
    ]
    return meta


def _named_param(category: str, value: str | None) -> dict[str, Any]:
    """A CV param when the value is a PSI-MS term name, else a userParam ``category=value``."""
    term = cv.psi_ms_term(value) if value is not None else None
    if term is None:
        return Param(category, None, value).to_json()
    return Param(*term).to_json()


__all__ = ["MzXMLFormat", "SPECTRA"]
