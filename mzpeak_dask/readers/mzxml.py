"""mzXML input through :class:`pyteomics.mzxml.MzXML`.

mzXML has attributes instead of CV terms; they are translated into the PSI-MS terms mzML would
use (``msLevel`` -> ``MS:1000511``, ``retentionTime`` -> scan start time in minutes, ...).
Nested scans are flattened in document order by pyteomics' index, which workers rebuild once
per process and input.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
from lxml import etree
from pyteomics import mzxml

from .. import cv
from .. import vocabulary as V
from ..filecache import per_file
from ..pathtext import is_utf8
from ..records import (
    Param,
    PrecursorRecord,
    RunMetadata,
    ScanRecord,
    SelectedIonRecord,
    SignalArray,
    SpectrumRecord,
)
from .base import SPECTRA, InputFormat, ItemRange, Survey, input_error, spectrum_error

_ACTIVATION = {
    "CID": ("collision-induced dissociation", "MS:1000133"),
    "HCD": ("beam-type collision-induced dissociation", "MS:1000422"),
    "ETD": ("electron transfer dissociation", "MS:1000598"),
    "ECD": ("electron capture dissociation", "MS:1000250"),
    "PQD": ("pulsed q dissociation", "MS:1000599"),
}
_VALUES = [  # mzXML scan attribute -> (term, accession, unit)
    ("lowMz", "lowest observed m/z", "MS:1000528", V.UNIT_MZ),
    ("highMz", "highest observed m/z", "MS:1000527", V.UNIT_MZ),
    ("basePeakMz", "base peak m/z", "MS:1000504", V.UNIT_MZ),
    ("basePeakIntensity", "base peak intensity", "MS:1000505", V.UNIT_DETECTOR_COUNTS),
    ("totIonCurrent", "total ion current", "MS:1000285", V.UNIT_DETECTOR_COUNTS),
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


@per_file(4)
def _reader(path: str) -> mzxml.MzXML:
    # lxml takes a file's name as its base URL and fails on a name that is not UTF-8: such a
    # file is handed over opened, without a name
    source = path if is_utf8(path) else open(os.open(path, os.O_RDONLY), "rb")
    return mzxml.MzXML(source, use_index=True, read_schema=False, huge_tree=True)


def _spectrum(info: dict[str, Any], position: int) -> SpectrumRecord:
    params: list[Param] = []
    level = int(info.get("msLevel", 1))
    params.append(Param("ms level", V.MS_LEVEL, level))
    params.append(
        Param("MS1 spectrum", V.MS1_SPECTRUM)
        if level == 1
        else Param("MSn spectrum", V.MSN_SPECTRUM)
    )
    centroided = info.get("centroided")
    if centroided is not None:
        params.append(
            Param("centroid spectrum", V.CENTROID_SPECTRUM)
            if centroided
            else Param("profile spectrum", V.PROFILE_SPECTRUM)
        )
    polarity = info.get("polarity")
    if polarity in ("+", "-"):
        params.append(
            Param("positive scan", V.POSITIVE_SCAN)
            if polarity == "+"
            else Param("negative scan", V.NEGATIVE_SCAN)
        )
    for key, term, accession, unit in _VALUES:
        if key in info:
            params.append(Param(term, accession, float(info[key]), unit))
    params.extend(
        Param(k, None, _plain(v))
        for k, v in info.items()
        if k not in _HANDLED and not isinstance(v, (dict, list, np.ndarray))
    )
    return SpectrumRecord(
        position=position,
        id=str(info.get("id", info.get("num", position))),
        params=params,
        scans=[_scan(info)],
        precursors=[_precursor(p, info) for p in info.get("precursorMz", [])],
        arrays=_arrays(info),
    )


def _plain(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)):
        return type(value)(value) if not isinstance(value, bool) else value
    return str(value)


def _scan(info: dict[str, Any]) -> ScanRecord:
    params = []
    if "retentionTime" in info:
        params.append(
            Param("scan start time", V.SCAN_START_TIME, float(info["retentionTime"]), V.UNIT_MINUTE)
        )
    if "filterLine" in info:
        params.append(Param("filter string", V.FILTER_STRING, str(info["filterLine"])))
    windows = []
    if "startMz" in info and "endMz" in info:
        windows.append(
            [
                Param(
                    "scan window lower limit",
                    V.SCAN_WINDOW_LOWER_LIMIT,
                    float(info["startMz"]),
                    V.UNIT_MZ,
                ),
                Param(
                    "scan window upper limit",
                    V.SCAN_WINDOW_UPPER_LIMIT,
                    float(info["endMz"]),
                    V.UNIT_MZ,
                ),
            ]
        )
    instrument = info.get("msInstrumentID")
    return ScanRecord(params, str(instrument) if instrument is not None else None, windows)


def _precursor(p: dict[str, Any], info: dict[str, Any]) -> PrecursorRecord:
    mz = float(p["precursorMz"])
    ion = [Param("selected ion m/z", V.SELECTED_ION_MZ, mz, V.UNIT_MZ)]
    if p.get("precursorCharge") is not None:
        ion.append(Param("charge state", V.CHARGE_STATE, int(p["precursorCharge"])))
    if p.get("precursorIntensity") is not None:
        ion.append(
            Param(
                "peak intensity",
                V.PEAK_INTENSITY,
                float(p["precursorIntensity"]),
                V.UNIT_DETECTOR_COUNTS,
            )
        )
    window = [Param("isolation window target m/z", V.ISOLATION_WINDOW_TARGET_MZ, mz, V.UNIT_MZ)]
    if p.get("windowWideness") is not None:
        half = float(p["windowWideness"]) / 2
        window += [
            Param(
                "isolation window lower offset", V.ISOLATION_WINDOW_LOWER_OFFSET, half, V.UNIT_MZ
            ),
            Param(
                "isolation window upper offset", V.ISOLATION_WINDOW_UPPER_OFFSET, half, V.UNIT_MZ
            ),
        ]
    activation = []
    method = p.get("activationMethod")
    if method:
        name, accession = _ACTIVATION.get(str(method).upper(), (str(method), None))
        activation.append(Param(name, accession))
    if info.get("collisionEnergy") is not None:
        activation.append(
            Param(
                "collision energy",
                V.COLLISION_ENERGY,
                float(info["collisionEnergy"]),
                V.UNIT_ELECTRONVOLT,
            )
        )
    ref = p.get("precursorScanNum")
    return PrecursorRecord(
        str(ref) if ref is not None else None, window, activation, [SelectedIonRecord(ion)]
    )


def _arrays(info: dict[str, Any]) -> list[SignalArray]:
    out = []
    for key, accession, unit in (
        ("m/z array", V.MZ_ARRAY, V.UNIT_MZ),
        ("intensity array", V.INTENSITY_ARRAY, V.UNIT_DETECTOR_COUNTS),
    ):
        values = info.get(key)
        if values is not None:
            values = np.asarray(values)
            out.append(
                SignalArray(accession, key, unit, values.astype(values.dtype.newbyteorder("=")))
            )
    return out


class MzXMLFormat(InputFormat):
    name = "mzXML"
    file_format = Param("ISB mzXML format", V.MZXML_FORMAT)
    native_id_format = Param("scan number only nativeID format", "MS:1000776")

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        return b"<mzXML" in head or b"<msRun" in head

    @classmethod
    def survey(cls, path: str) -> Survey:
        try:
            reader = _reader(path)
            count = len(reader)
        except (etree.XMLSyntaxError, ValueError, KeyError) as exc:
            raise input_error(path, f"malformed mzXML ({exc})") from None
        return Survey(count, 0, _run_metadata(path))

    @classmethod
    def read(
        cls, path: str, items: ItemRange, hints: dict[str, object]
    ) -> Iterator[SpectrumRecord]:
        reader = _reader(path)
        for position in range(items.start, items.stop):
            try:
                info = reader.get_by_index(position)
            except (etree.XMLSyntaxError, ValueError, KeyError, OSError) as exc:
                raise spectrum_error(
                    path, f"scan {position} (0-based)", f"cannot parse ({exc})"
                ) from None
            yield _spectrum(info, position)


_HEADER_END = re.compile(rb"<scan[\s>]")


def _run_metadata(path: str) -> RunMetadata:
    """Instruments, software and parent files from the ``<msRun>`` header."""
    with open(path, "rb") as f:
        head = f.read(1 << 20)
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
            "parameters": [Param("SHA-1", V.SHA1, pf.get("fileSha1")).to_json()]
            if pf.get("fileSha1")
            else [],
        }
        for n, pf in enumerate(root.iter("{*}parentFile"))
    ]
    return meta


def _named_param(category: str, value: str | None) -> dict[str, Any]:
    """A CV param when the value is a PSI-MS term name, else a userParam ``category=value``."""
    try:
        term = cv.psi_ms()[value]
        return Param(term.name, term.id).to_json()
    except (KeyError, TypeError):
        return Param(category, None, value).to_json()


__all__ = ["MzXMLFormat", "SPECTRA"]
