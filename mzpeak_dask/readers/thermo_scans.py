"""One Thermo scan as a :class:`~mzpeak_dask.model.records.SpectrumRecord`, with the params
msconvert writes for the same scan where the PSI-MS vocabulary has a term (docs/archive.md,
"Thermo .raw", lists the mapping): MS level, spectrum type, polarity, representation, TIC, base
peak, observed m/z range; scan start time, filter string, ion injection time, scan window; the
precursor's isolation window, selected ion (m/z, charge) and activation (method, energy).

The data are the scan as stored (profile or centroid, Thermo's "segmented scan"), or its
centroid stream when asked (``thermo_centroid``) and the scan has one."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..format import vocabulary as V
from ..model.records import Param, PrecursorRecord, ScanRecord, SignalArray, SpectrumRecord
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


TRAILER_LABELS = (MASTER_SCAN, MONOISOTOPIC_MZ, CHARGE_STATE, INJECTION_TIME)
# scan filters whose facts are kept (a DDA run has one per precursor m/z). Reading facts once
# per filter and building the precursor's params once per distinct value save 19-27 % of the
# records' cost (tests/benchmarks/bench_vendor_thermo.py, cached against uncached)
EVENTS_KEPT = 4096


@dataclass(frozen=True, slots=True)
class EventFacts:
    """What a scan's filter string says in full, the same for every scan of that filter (not
    its precursor: the filter shows the m/z rounded, the scan event holds it whole)."""

    level: int
    positive: bool
    analyzer: int
    windows: tuple[tuple[Param, ...], ...]


class ScanReader:
    """Per file: where the trailer extra labels it reads sit, and the facts of each scan
    filter met so far (read from Thermo's scan event once per filter)."""

    def __init__(self, raw: Any):
        labels = [str(h.Label).strip() for h in raw.GetTrailerExtraHeaderInformation()]
        self.raw = raw
        self.at = {label: i for i, label in enumerate(labels) if label in TRAILER_LABELS}
        self.events: dict[str, EventFacts] = {}
        self.windows: dict[tuple, tuple[list[Param], list[Param]]] = {}

    def extra(self, scan: int) -> dict[str, str]:
        if not self.at:
            return {}
        values = self.raw.GetTrailerExtraValues(scan, False)  # unformatted: full precision
        n = values.Length
        return {k: str(values[i]).strip() for k, i in self.at.items() if i < n}

    def facts(self, scan: int, filter_string: str) -> EventFacts:
        found = self.events.get(filter_string)
        if found is None:
            if len(self.events) >= EVENTS_KEPT:
                self.events.clear()
            found = self.events[filter_string] = _facts(self.raw.GetScanEventForScanNumber(scan))
        return found


def _facts(event: Any) -> EventFacts:
    level = max(int(event.MSOrder), 1)
    windows = []
    for i in range(int(event.MassRangeCount)):
        window = event.GetMassRange(i)
        windows.append(
            (
                Param.term(V.SCAN_WINDOW_LOWER_LIMIT, float(window.Low), V.UNIT_MZ),
                Param.term(V.SCAN_WINDOW_UPPER_LIMIT, float(window.High), V.UNIT_MZ),
            )
        )
    return EventFacts(level, bool(int(event.Polarity)), int(event.MassAnalyzer), tuple(windows))


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


def spectrum(reader: ScanReader, scan: int, position: int, centroid_stream: bool) -> SpectrumRecord:
    raw = reader.raw
    stats = raw.GetScanStatsForScanNumber(scan)
    mz, intensity, centroid = scan_data(raw, scan, stats, centroid_stream)
    filter_string = str(raw.GetScanEventStringForScanNumber(scan))
    facts = reader.facts(scan, filter_string)
    extra = reader.extra(scan)
    params = [*_kind_params(facts.level, centroid, facts.positive), *_summary(stats, mz)]
    return SpectrumRecord(
        position=position,
        id=native_id(scan),
        params=params,
        scans=[_scan(stats, filter_string, facts, extra)],
        precursors=_precursors(reader, scan, extra) if facts.level >= 2 else [],
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


def _scan(stats: Any, filter_string: str, facts: EventFacts, extra: dict[str, str]) -> ScanRecord:
    params = [
        Param.term(V.SCAN_START_TIME, float(stats.StartTime), V.UNIT_MINUTE),
        Param.term(V.FILTER_STRING, filter_string),
    ]
    injection = _number(extra.get(INJECTION_TIME))
    if injection is not None:
        params.append(
            Param("ion injection time", V.ION_INJECTION_TIME, injection, V.UNIT_MILLISECOND)
        )
    mono = _number(extra.get(MONOISOTOPIC_MZ))
    if mono is not None:
        params.append(Param(TRAILER_PREFIX + MONOISOTOPIC_MZ, None, mono))
    windows = [list(window) for window in facts.windows]
    return ScanRecord(params, instrument_key(facts.analyzer), windows)


def _isolation(reaction: Any, target: float) -> list[Param]:
    width = float(reaction.IsolationWidth)
    offset = float(reaction.IsolationWidthOffset)
    isolation = [Param.term(V.ISOLATION_WINDOW_TARGET_MZ, target, V.UNIT_MZ)]
    if width > 0:
        isolation += [
            Param.term(V.ISOLATION_WINDOW_LOWER_OFFSET, width / 2 - offset, V.UNIT_MZ),
            Param.term(V.ISOLATION_WINDOW_UPPER_OFFSET, width / 2 + offset, V.UNIT_MZ),
        ]
    return isolation


@functools.cache
def _kind_params(level: int, centroid: bool, positive: bool) -> tuple[Param, ...]:
    return tuple(
        spectrum_params(level, ms1=level == 1, centroid=centroid, polarity="+" if positive else "-")
    )


def _reaction(raw: Any, scan: int) -> tuple[float, Any] | None:
    """The precursor m/z of the scan's last reaction (its own precursor), and the reaction."""
    event = raw.GetScanEventForScanNumber(scan)
    count = int(event.MassCount)
    if count < 1:
        return None
    reaction = event.GetReaction(count - 1)
    return float(reaction.PrecursorMass), reaction


def _precursors(reader: ScanReader, scan: int, extra: dict[str, str]) -> list[PrecursorRecord]:
    found = _reaction(reader.raw, scan)
    if found is None:
        return []
    target, reaction = found
    key = (  # every value the window and activation params are made of
        target,
        float(reaction.IsolationWidth),
        float(reaction.IsolationWidthOffset),
        int(reaction.ActivationType),
        float(reaction.CollisionEnergy),
        bool(reaction.CollisionEnergyValid),
    )
    window = reader.windows.get(key)
    if window is None:
        if len(reader.windows) >= EVENTS_KEPT:
            reader.windows.clear()
        window = reader.windows[key] = (_isolation(reaction, target), _activation(reaction))
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
            isolation_window=list(window[0]),
            activation=list(window[1]),
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
