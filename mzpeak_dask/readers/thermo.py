"""Thermo ``.raw`` input through Thermo's RawFileReader (fisher-py on Mono, the ``thermo``
extra; :mod:`.thermo_runtime` loads it where a file is read, never at import).

A file is recognised by its signature (``01 A1`` then "Finnigan" in UTF-16). Its scans are
items ``0 .. n-1`` (scan numbers ``first .. last``), cut into partitions by count; each worker
opens the file once (per thread) and reads its scans by number. The run's chromatograms are
its TIC and base peak traces over every scan, as Thermo's library computes them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from ..errors import MzPeakDaskError
from ..format import vocabulary as V
from ..model.records import ChromatogramRecord, Param, RunMetadata, SpectrumRecord
from . import thermo_terms as T
from .base import CHROMATOGRAMS, InputFormat, ItemRange, Survey, input_error, spectrum_error
from .thermo_runtime import dotnet_error, open_raw, runtime
from .thermo_scans import ScanReader, chromatogram_arrays, instrument_key, spectrum

SIGNATURE = b"\x01\xa1" + "Finnigan".encode("utf-16-le")
CENTROID_HINT = "thermo_centroid"  # survey hint: read the centroid stream (--thermo-centroid)
# (id, chromatogram type, Thermo trace type attribute of the runtime)
_CHROMATOGRAMS = (
    ("TIC", V.TIC_CHROMATOGRAM, "trace_tic"),
    ("BPC", V.BASE_PEAK_CHROMATOGRAM, "trace_base_peak"),
)


def _scan_range(raw: Any, name: str) -> tuple[int, int]:
    header = raw.RunHeaderEx
    first, last = int(header.FirstSpectrum), int(header.LastSpectrum)
    if int(header.SpectraCount) < 1 or last < first:
        return first, 0
    if last - first + 1 != int(header.SpectraCount):
        raise input_error(name, f"the scan numbers {first}-{last} disagree with its scan count")
    return first, last - first + 1


def _run_metadata(raw: Any, path: str, count: int) -> RunMetadata:
    meta = RunMetadata()
    data = raw.GetInstrumentData()
    model = T.model_param(str(data.Model or data.Name or ""))
    identity = [model.to_json()]
    if str(data.SerialNumber or "").strip():
        identity.append(T.term(T.SERIAL_NUMBER, str(data.SerialNumber).strip()).to_json())
    filters = list(raw.GetFilters()) if count else []  # the run's distinct scan filters
    analyzers = sorted({int(f.MassAnalyzer) for f in filters})
    ionizations = {int(f.IonizationMode) for f in filters}
    for number, analyzer in enumerate(analyzers):
        meta.instrument_ids[instrument_key(analyzer)] = number
        meta.instrument_configuration_list.append(
            {
                "id": number,
                "components": _components(analyzer, ionizations),
                "parameters": identity,
                "software_reference": "Xcalibur",
                "source_id": instrument_key(analyzer),
            }
        )
    meta.software_list = [
        {
            "id": "Xcalibur",
            "version": str(data.SoftwareVersion or "") or None,
            "parameters": [Param("Xcalibur", "MS:1000532").to_json()],
        }
    ]
    levels = {max(int(f.MSOrder), 1) for f in filters}
    meta.file_description["contents"] = [
        Param.term(V.MS1_SPECTRUM if level == 1 else V.MSN_SPECTRUM).to_json()
        for level in sorted(levels)[:2]
    ]
    sample = str(raw.SampleInformation.SampleName or "")
    if sample:
        meta.sample_list = [{"id": "sample_1", "name": sample, "parameters": []}]
    created = raw.FileHeader.CreationDate
    meta.run = {
        "id": os.path.splitext(os.path.basename(path))[0],
        "default_instrument_id": 0 if analyzers else None,
        "start_time": created.ToString("yyyy-MM-ddTHH:mm:ss.fff"),
        "sample_id": "sample_1" if sample else None,
        "parameters": [],
    }
    return meta


def _components(analyzer: int, ionizations: set[int]) -> list[dict[str, Any]]:
    parts = []
    source = [T.IONIZATIONS[i] for i in sorted(ionizations) if i in T.IONIZATIONS]
    if source:
        parts.append(("ionsource", source[0]))
    if analyzer in T.ANALYZERS:
        kind, detector = T.ANALYZERS[analyzer]
        parts += [("analyzer", kind), ("detector", detector)]
    return [
        {"component_type": kind, "order": order, "parameters": [T.term(pair).to_json()]}
        for order, (kind, pair) in enumerate(parts, start=1)
    ]


class ThermoRawFormat(InputFormat):
    name = "Thermo RAW"
    file_format = T.THERMO_RAW_FORMAT
    native_id_format = T.THERMO_NATIVE_ID

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        return head.startswith(SIGNATURE)

    @classmethod
    def survey(cls, path: str, name: str | None = None) -> Survey:
        name = name or path
        raw = open_raw(path, name)
        try:
            first, count = _scan_range(raw, name)
            meta = _run_metadata(raw, path, count)
        except MzPeakDaskError:
            raise
        except Exception as exc:  # noqa: BLE001 - .NET exceptions from a damaged file
            why = f"unreadable Thermo .raw header ({dotnet_error(exc)})"
            raise input_error(name, why) from None
        chromatograms = len(_CHROMATOGRAMS) if count else 0
        return Survey(count, chromatograms, meta, hints={"first_scan": first})

    @classmethod
    def read(
        cls, path: str, items: ItemRange, hints: dict[str, object], name: str | None = None
    ) -> Iterator[SpectrumRecord | ChromatogramRecord]:
        name = name or path
        raw = open_raw(path, name)
        if items.kind == CHROMATOGRAMS:
            yield from _chromatograms(raw, items, name)
            return
        first = int(hints["first_scan"])  # type: ignore[call-overload]
        centroid = bool(hints.get(CENTROID_HINT, False))
        reader = ScanReader(raw)
        for position in range(items.start, items.stop):
            scan = first + position
            try:
                record = spectrum(reader, scan, position, centroid)
            except Exception as exc:  # noqa: BLE001 - .NET exceptions from a damaged scan
                raise spectrum_error(name, f"scan {scan}", dotnet_error(exc)) from None
            yield record


def _chromatograms(raw: Any, items: ItemRange, name: str) -> Iterator[ChromatogramRecord]:
    from System import Array  # loaded with the runtime (open_raw)

    rt = runtime(name)
    for position in range(items.start, items.stop):
        ident, kind, trace = _CHROMATOGRAMS[position]
        settings = Array[type(rt.trace_settings(getattr(rt, trace)))](1)  # noqa: B023
        try:
            settings[0] = rt.trace_settings(getattr(rt, trace))
            data = raw.GetChromatogramData(settings, -1, -1)
            arrays = chromatogram_arrays(data.PositionsArray[0], data.IntensitiesArray[0])
        except Exception as exc:  # noqa: BLE001 - a .NET exception
            raise spectrum_error(name, f"chromatogram {ident}", dotnet_error(exc)) from None
        params = [Param.term(kind)]
        yield ChromatogramRecord(position=position, id=ident, params=params, arrays=arrays)
