"""One Thermo scan as a :class:`~mzpeak_dask.records.SpectrumRecord`, with the params msconvert
writes for the same scan where the PSI-MS vocabulary has a term (docs/archive.md, "Thermo
.raw", lists the mapping): MS level, spectrum type, polarity, representation, TIC, base peak,
observed m/z range; scan start time, filter string, ion injection time, scan window; the
precursor's isolation window, selected ion (m/z, charge) and activation (method, energy).

The data are the scan as stored (profile or centroid, Thermo's "segmented scan"), or its
centroid stream when asked (``thermo_centroid``) and the scan has one."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import vocabulary as V
from ..records import Param, PrecursorRecord, ScanRecord, SignalArray, SpectrumRecord
from . import thermo_terms as T
from .plain_values import selected_ion, signal_arrays, spectrum_params
from .thermo_runtime import numbers

MASTER_SCAN = "Master Scan Number:"
MONOISOTOPIC_MZ = "Monoisotopic M/Z:"
CHARGE_STATE = "Charge State:"
INJECTION_TIME = "Ion Injection Time (ms):"
TRAILER_PREFIX = "[Thermo Trailer Extra]"


def native_id(scan: int) -> str:
    return f"controllerType=0 controllerNumber=1 scan={scan}"


def instrument_key(analyzer: int) -> str:
    """The source id of the instrument configuration of a mass analyzer (``IC1``...)."""
    return f"IC_{T.ANALYZER_NAMES.get(analyzer, str(analyzer))}"


class TrailerIndex:
    """Where each label of the file's trailer extra values sits (read once per file)."""

    def __init__(self, raw: Any):
        labels = [str(h.Label).strip() for h in raw.GetTrailerExtraHeaderInformation()]
        self.at = {label: i for i, label in enumerate(labels)}

    def values(self, raw: Any, scan: int) -> dict[str, str]:
        if not self.at:
            return {}
        values = list(raw.GetTrailerExtraValues(scan, True))
        return {k: str(values[i]).strip() for k, i in self.at.items() if i < len(values)}


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def scan_data(raw: Any, scan: int, stats: Any, centroid_stream: bool) -> tuple:
    """``(mz, intensity, centroid)`` of the scan: as stored, or its centroid stream."""
    if centroid_stream:
        stream = raw.GetCentroidStream(scan, False)
        if stream is not None and stream.Length > 0:
            return numbers(stream.Masses), numbers(stream.Intensities), True
    segmented = raw.GetSegmentedScanFromScanNumber(scan, stats)
    return numbers(segmented.Positions), numbers(segmented.Intensities), bool(stats.IsCentroidScan)


def spectrum(
    raw: Any, scan: int, position: int, trailer: TrailerIndex, centroid_stream: bool
) -> SpectrumRecord:
    stats = raw.GetScanStatsForScanNumber(scan)
    event = raw.GetScanEventForScanNumber(scan)
    extra = trailer.values(raw, scan)
    mz, intensity, centroid = scan_data(raw, scan, stats, centroid_stream)
    level = max(int(event.MSOrder), 1)
    params = spectrum_params(
        level, ms1=level == 1, centroid=centroid, polarity="+" if int(event.Polarity) else "-"
    )
    params += _summary(stats, mz)
    return SpectrumRecord(
        position=position,
        id=native_id(scan),
        params=params,
        scans=[_scan(raw, scan, event, stats, extra)],
        precursors=_precursors(event, extra, level),
        arrays=signal_arrays(mz, intensity),
    )


def _summary(stats: Any, mz: np.ndarray) -> list[Param]:
    out = [
        Param.term(V.BASE_PEAK_MZ, float(stats.BasePeakMass), V.UNIT_MZ),
        Param.term(V.BASE_PEAK_INTENSITY, float(stats.BasePeakIntensity), V.UNIT_DETECTOR_COUNTS),
        Param.term(V.TOTAL_ION_CURRENT, float(stats.TIC), V.UNIT_DETECTOR_COUNTS),
    ]
    if len(mz):
        out += [
            Param.term(V.LOWEST_OBSERVED_MZ, float(mz.min()), V.UNIT_MZ),
            Param.term(V.HIGHEST_OBSERVED_MZ, float(mz.max()), V.UNIT_MZ),
        ]
    return out


def _scan(raw: Any, scan: int, event: Any, stats: Any, extra: dict[str, str]) -> ScanRecord:
    params = [
        Param.term(V.SCAN_START_TIME, float(stats.StartTime), V.UNIT_MINUTE),
        Param.term(V.FILTER_STRING, str(raw.GetScanEventStringForScanNumber(scan))),
    ]
    injection = _number(extra.get(INJECTION_TIME))
    if injection is not None:
        params.append(
            Param("ion injection time", V.ION_INJECTION_TIME, injection, V.UNIT_MILLISECOND)
        )
    mono = _number(extra.get(MONOISOTOPIC_MZ))
    if mono is not None:
        params.append(Param(TRAILER_PREFIX + MONOISOTOPIC_MZ, None, mono))
    windows = []
    for i in range(int(event.MassRangeCount)):
        window = event.GetMassRange(i)
        windows.append(
            [
                Param.term(V.SCAN_WINDOW_LOWER_LIMIT, float(window.Low), V.UNIT_MZ),
                Param.term(V.SCAN_WINDOW_UPPER_LIMIT, float(window.High), V.UNIT_MZ),
            ]
        )
    return ScanRecord(params, instrument_key(int(event.MassAnalyzer)), windows)


def _precursors(event: Any, extra: dict[str, str], level: int) -> list[PrecursorRecord]:
    count = int(event.MassCount)
    if level < 2 or count < 1:
        return []
    reaction = event.GetReaction(count - 1)
    target = float(reaction.PrecursorMass)
    width = float(reaction.IsolationWidth)
    offset = float(reaction.IsolationWidthOffset)
    isolation = [Param.term(V.ISOLATION_WINDOW_TARGET_MZ, target, V.UNIT_MZ)]
    if width > 0:
        isolation += [
            Param.term(V.ISOLATION_WINDOW_LOWER_OFFSET, width / 2 - offset, V.UNIT_MZ),
            Param.term(V.ISOLATION_WINDOW_UPPER_OFFSET, width / 2 + offset, V.UNIT_MZ),
        ]
    mono = _number(extra.get(MONOISOTOPIC_MZ))
    charge = _number(extra.get(CHARGE_STATE))
    ion = selected_ion(
        mono if mono is not None and mono > 0 else target,
        int(charge) if charge is not None and charge > 0 else None,
    )
    master = _number(extra.get(MASTER_SCAN))
    return [
        PrecursorRecord(
            spectrum_ref=native_id(int(master)) if master is not None and master > 0 else None,
            isolation_window=isolation,
            activation=_activation(reaction),
            selected_ions=[ion],
        )
    ]


def _activation(reaction: Any) -> list[Param]:
    method = T.ACTIVATIONS.get(int(reaction.ActivationType))
    out = [T.term(method)] if method else []
    if bool(reaction.CollisionEnergyValid) or float(reaction.CollisionEnergy) > 0:
        out.append(
            Param.term(V.COLLISION_ENERGY, float(reaction.CollisionEnergy), V.UNIT_ELECTRONVOLT)
        )
    return out


def chromatogram_arrays(times: Any, values: Any) -> list[SignalArray]:
    return [
        SignalArray(V.TIME_ARRAY, "time array", V.UNIT_MINUTE, numbers(times)),
        SignalArray(V.INTENSITY_ARRAY, "intensity array", V.UNIT_DETECTOR_COUNTS, numbers(values)),
    ]
