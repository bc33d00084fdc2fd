"""A timsTOF run's file-level metadata from ``analysis.tdf``'s ``GlobalMetadata`` table, shaped
as the mzPeak footer (format doc section 4): the two source files, the instrument (timsTOF
series, serial number, ion source, quadrupole, TOF, detector), the acquisition software."""

from __future__ import annotations

import os
from typing import Any

from ..model.records import Param, RunMetadata
from ..support.pathtext import uri
from .tdf_tables import DDA_SPECTRUM, DIA_SPECTRUM, MS1_SPECTRUM, TDF, TDF_BIN, TdfTables

BRUKER_TDF_FORMAT = "MS:1002817"
BRUKER_TDF_NATIVE_ID = "MS:1002818"
INSTRUMENT_ID = "IC1"
# InstrumentSourceType codes (Bruker) -> PSI-MS ionization and inlet terms
_ESI = [("electrospray ionization", "MS:1000073"), ("electrospray inlet", "MS:1000057")]
_NANO = [("nanoelectrospray", "MS:1000398"), ("nanospray inlet", "MS:1000485")]
_SOURCES = {1: _ESI, 8: _ESI, 10: _ESI, 18: _ESI, 3: _NANO, 4: _NANO, 9: _NANO, 11: _NANO,
            2: [("atmospheric pressure chemical ionization", "MS:1000070")],
            5: [("atmospheric pressure photoionization", "MS:1000382")],
            7: [("matrix-assisted laser desorption ionization", "MS:1000075")]}  # fmt: skip


def _json(params: list[Param]) -> list[dict[str, Any]]:
    return [p.to_json() for p in params]


def run_metadata(path: str, tables: TdfTables) -> RunMetadata:
    meta = RunMetadata()
    g = tables.metadata
    kinds = {e.kind for e in tables.entries}
    contents = []
    if MS1_SPECTRUM in kinds:
        contents.append(Param("MS1 spectrum", "MS:1000579"))
    if kinds & {DDA_SPECTRUM, DIA_SPECTRUM}:
        contents.append(Param("MSn spectrum", "MS:1000580"))
    source_params = [
        Param("Bruker TDF nativeID format", BRUKER_TDF_NATIVE_ID),
        Param("Bruker TDF format", BRUKER_TDF_FORMAT),
    ]
    location = uri(path)
    meta.file_description = {
        "contents": _json(contents),
        "source_files": [
            {"id": f, "name": f, "location": location, "parameters": _json(source_params)}
            for f in (TDF, TDF_BIN)
        ],
    }
    meta.software_list = [
        {
            "id": "acquisition_software",
            "version": g.get("AcquisitionSoftwareVersion") or None,
            "parameters": _json(
                [Param("Bruker software", "MS:1000692"),
                 Param("software name", None, g.get("AcquisitionSoftware") or None)]
            ),
        }
    ]  # fmt: skip
    instrument = [Param("Bruker Daltonics timsTOF series", "MS:1003123")]
    if g.get("InstrumentSerialNumber"):
        instrument.append(Param("instrument serial number", "MS:1000529",
                                g["InstrumentSerialNumber"]))  # fmt: skip
    if g.get("InstrumentName"):
        instrument.append(Param("instrument name", None, g["InstrumentName"]))
    meta.instrument_ids = {INSTRUMENT_ID: 0}
    meta.instrument_configuration_list = [
        {
            "id": 0,
            "components": _components(g),
            "parameters": _json(instrument),
            "software_reference": "acquisition_software",
            "source_id": INSTRUMENT_ID,
        }
    ]
    sample = g.get("SampleName")
    if sample:
        meta.sample_list = [{"id": "sample_1", "name": sample, "parameters": []}]
    run_id = os.path.basename(os.path.normpath(path))
    meta.run = {"id": run_id.removesuffix(".d"), "parameters": []}
    if g.get("AcquisitionDateTime"):
        meta.run["start_time"] = g["AcquisitionDateTime"]
    return meta


def _components(g: dict[str, str]) -> list[dict[str, Any]]:
    try:
        source = _SOURCES.get(int(g.get("InstrumentSourceType", "")), [])
    except ValueError:
        source = []
    parts = [
        ("ionsource", [Param(n, a) for n, a in source]),
        ("analyzer", [Param("quadrupole", "MS:1000081")]),
        ("analyzer", [Param("time-of-flight", "MS:1000084")]),
        ("detector", [Param("microchannel plate detector", "MS:1000114")]),
    ]
    return [
        {"component_type": kind, "order": order, "parameters": _json(params)}
        for order, (kind, params) in enumerate(parts, start=1)
    ]
