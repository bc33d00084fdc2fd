"""Bruker timsTOF ``.d`` folders (TDF: ``analysis.tdf`` + ``analysis.tdf_bin``) as spectra.

The mapping (docs/archive.md, "Bruker timsTOF .d"): an MS1 frame is one spectrum; a ddaPASEF
precursor is one spectrum combining every scan of every frame that measured it; a diaPASEF
frame is one spectrum per window of its window group. Each spectrum keeps every peak as
recorded, with its m/z, its intensity (detector counts) and the 1/K0 of its scan (a mean
inverse reduced ion mobility array), sorted by m/z. m/z and 1/K0 are timsrust's conversions.

Partitions are ranges of spectra, which follow the frames' order; each worker opens the folder
once (:func:`.tdf_frames.open_run`). The run's chromatograms are its TIC and base peak traces,
one point per frame from the Frames table (``SummedIntensities``, ``MaxIntensity``), with each
frame's MS level beside them, as msconvert writes them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator

import numpy as np

from ..format import vocabulary as V
from ..model.records import (
    ChromatogramRecord,
    Param,
    PrecursorRecord,
    ScanRecord,
    SelectedIonRecord,
    SignalArray,
    SpectrumRecord,
)
from ..storage.inputs import is_vendor_folder
from .base import CHROMATOGRAMS, InputFormat, ItemRange, Survey
from .plain_values import spectrum_params
from .tdf_frames import Frame, TdfRun, open_run, timsrust
from .tdf_metadata import BRUKER_TDF_FORMAT, BRUKER_TDF_NATIVE_ID, run_metadata
from .tdf_tables import DDA_SPECTRUM, DIA_SPECTRUM, MS1, MS1_SPECTRUM, Entry, TdfTables

_IM = "MS:1002815"  # inverse reduced ion mobility (a selected ion's)
_CID = "MS:1000133"
_FRAMES_KEPT = 8  # frames a partition keeps read (a precursor spans a few frames)
# (id, chromatogram type, the Frames table's column of the trace)
_CHROMATOGRAMS = (
    ("TIC", V.TIC_CHROMATOGRAM, "SummedIntensities"),
    ("BPC", V.BASE_PEAK_CHROMATOGRAM, "MaxIntensity"),
)


class BrukerTDFFormat(InputFormat):
    name = "Bruker TDF"
    file_format = Param("Bruker TDF format", BRUKER_TDF_FORMAT)
    native_id_format = Param("Bruker TDF nativeID format", BRUKER_TDF_NATIVE_ID)

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        return False  # a folder, never a file's bytes (sniff_folder)

    @classmethod
    def sniff_folder(cls, path: str) -> bool:
        return is_vendor_folder(path)

    @classmethod
    def survey(cls, path: str, name: str | None = None) -> Survey:
        name = name or path
        timsrust(name)  # the one line saying what to install, before any work
        run = open_run(path, name)
        meta = run_metadata(path, run.tables)
        offsets = _weights(run)
        chromatograms = len(_CHROMATOGRAMS)
        return Survey(len(run.tables.entries), chromatograms, meta, spectrum_offsets=offsets)

    @classmethod
    def read(
        cls, path: str, items: ItemRange, hints: dict[str, object], name: str | None = None
    ) -> Iterator[SpectrumRecord | ChromatogramRecord]:
        run = open_run(path, name or path)
        if items.kind == CHROMATOGRAMS:
            for position in range(items.start, items.stop):
                yield _chromatogram(run.tables, position)
            return
        frames: OrderedDict[int, Frame] = OrderedDict()
        for position in range(items.start, items.stop):
            yield _spectrum(run, position, frames)


def _chromatogram(tables: TdfTables, position: int) -> ChromatogramRecord:
    """The run's TIC or base peak trace: a point per frame, its time, the frame's summed or
    largest intensity, and its MS level (1, or 2 for every PASEF kind)."""
    ident, kind, column = _CHROMATOGRAMS[position]
    f = tables.frames
    levels = np.where(f["MsMsType"] == MS1, 1, 2).astype(np.int64)
    arrays = [
        SignalArray(V.TIME_ARRAY, "time array", V.UNIT_SECOND, f["Time"]),
        SignalArray(V.INTENSITY_ARRAY, "intensity array", V.UNIT_DETECTOR_COUNTS, f[column]),
        SignalArray(V.NON_STANDARD_ARRAY, "ms level", V.UNIT_DIMENSIONLESS, levels),
    ]
    return ChromatogramRecord(position=position, id=ident, params=[Param.term(kind)], arrays=arrays)


def _weights(run: TdfRun) -> np.ndarray:
    """Where each spectrum would start if the spectra's compressed bytes followed each other:
    each part of a spectrum weighs its frame's packet bytes times its share of the frame's
    scans. Partitions are cut on these, so that each holds about as many peaks (a 242,000-peak
    MS1 frame beside 2,000-peak diaPASEF windows); workers read by spectrum, never by them."""
    f = run.tables.frames
    at = f["TimsId"]
    ends = np.append(at[1:], run.bin_size)
    packet = np.where(f["NumPeaks"] > 0, np.maximum(ends - at, 0), 0).astype(np.float64)
    sizes = [
        sum(packet[row] * (end - begin) / f["NumScans"][row] for row, begin, end in e.parts)
        for e in run.tables.entries
    ]
    return np.concatenate(([0], np.cumsum(np.ceil(sizes)))).astype(np.int64)


def native_id(run: TdfRun, position: int, entry: Entry) -> str:
    frame, begin, end = entry.parts[0]
    text = f"merged={position} frame={frame + 1} startScan={begin + 1} endScan={end}"
    return text if entry.precursor is None else f"{text} precursor={entry.precursor}"


def _frame(run: TdfRun, row: int, frames: OrderedDict[int, Frame]) -> Frame:
    if row in frames:
        frames.move_to_end(row)
        return frames[row]
    frame = frames[row] = run.frame(row)
    if len(frames) > _FRAMES_KEPT:
        frames.popitem(last=False)
    return frame


def _points(
    run: TdfRun, entry: Entry, frames: OrderedDict[int, Frame]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """m/z, intensity and 1/K0 of every peak of the entry's scans, frame by frame, in order
    of increasing 1/K0 (the frame's scans from last to first, as mzdata orders them), each
    scan's peaks in TOF (so m/z) order."""
    mzs, intensities, mobilities = [], [], []
    for row, begin, end in entry.parts:
        frame = _frame(run, row, frames)
        order, counts = _reversed_scans(frame.scan_offsets[begin : end + 1])
        mzs.append(run.mz(frame.tof[order], row))
        intensities.append(frame.intensity[order])
        mobilities.append(np.repeat(run.scan_mobility(begin, end)[::-1], counts))
    mz = np.concatenate(mzs)
    return mz, np.concatenate(intensities).astype(np.float32), np.concatenate(mobilities)


def _reversed_scans(offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positions of the peaks of the scans ``offsets`` delimit, last scan first, and each
    scan's peak count in that order."""
    starts, counts = offsets[-2::-1], np.diff(offsets)[::-1]
    total = int(counts.sum())
    shift = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return np.arange(total, dtype=np.int64) + shift, counts


def _spectrum(run: TdfRun, position: int, frames: OrderedDict[int, Frame]) -> SpectrumRecord:
    tables = run.tables
    entry = tables.entries[position]
    row = entry.frame
    negative = bool(tables.frames["Negative"][row])
    mz, intensity, mobility = _points(run, entry, frames)
    level = 1 if entry.kind == MS1_SPECTRUM else 2
    params = spectrum_params(
        level, ms1=level == 1, centroid=True, polarity="-" if negative else "+"
    )
    if len(mz):
        top = int(np.argmax(intensity))
        params += [
            Param.term(V.BASE_PEAK_MZ, float(mz[top]), V.UNIT_MZ),
            Param.term(V.BASE_PEAK_INTENSITY, float(intensity[top]), V.UNIT_DETECTOR_COUNTS),
            Param.term(V.TOTAL_ION_CURRENT, float(intensity.sum(dtype=np.float64))),
            Param.term(V.LOWEST_OBSERVED_MZ, float(mz.min()), V.UNIT_MZ),
            Param.term(V.HIGHEST_OBSERVED_MZ, float(mz.max()), V.UNIT_MZ),
        ]
    arrays = [
        SignalArray(V.MZ_ARRAY, "m/z array", V.UNIT_MZ, mz),
        SignalArray(V.INTENSITY_ARRAY, "intensity array", V.UNIT_DETECTOR_COUNTS, intensity),
        SignalArray(
            V.MEAN_INVERSE_REDUCED_ION_MOBILITY_ARRAY,
            "mean inverse reduced ion mobility array",
            V.UNIT_VOLT_SECOND_PER_SQUARE_CM,
            mobility,
        ),
    ]
    return SpectrumRecord(
        position=position,
        id=native_id(run, position, entry),
        params=params,
        scans=[_scan(run, row)],
        precursors=_precursors(run, entry),
        arrays=arrays,
    )


def _scan(run: TdfRun, row: int) -> ScanRecord:
    meta = run.tables.metadata
    time = float(run.tables.frames["Time"][row])
    window = []
    try:
        low, high = float(meta["MzAcqRangeLower"]), float(meta["MzAcqRangeUpper"])
        window = [
            [
                Param.term(V.SCAN_WINDOW_LOWER_LIMIT, low, V.UNIT_MZ),
                Param.term(V.SCAN_WINDOW_UPPER_LIMIT, high, V.UNIT_MZ),
            ]
        ]
    except (KeyError, ValueError):
        pass
    return ScanRecord([Param.term(V.SCAN_START_TIME, time, V.UNIT_SECOND)], scan_windows=window)


def _isolation(target: float, width: float) -> list[Param]:
    half = float(width) / 2
    return [
        Param.term(V.ISOLATION_WINDOW_TARGET_MZ, float(target), V.UNIT_MZ),
        Param.term(V.ISOLATION_WINDOW_LOWER_OFFSET, half, V.UNIT_MZ),
        Param.term(V.ISOLATION_WINDOW_UPPER_OFFSET, half, V.UNIT_MZ),
    ]


def _activation(energy: float | None) -> list[Param]:
    out = [Param.term(_CID)]
    if energy is not None:
        out.append(Param.term(V.COLLISION_ENERGY, float(energy), V.UNIT_ELECTRONVOLT))
    return out


def _precursors(run: TdfRun, entry: Entry) -> list[PrecursorRecord]:
    tables = run.tables
    if entry.kind == DIA_SPECTRUM:
        _, _, _, target, width, energy = tables.windows[entry.window]
        ion = SelectedIonRecord([Param.term(V.SELECTED_ION_MZ, float(target), V.UNIT_MZ)])
        return [
            PrecursorRecord(
                spectrum_ref=_last_ms1(run, entry.frame),
                isolation_window=_isolation(target, width),
                activation=_activation(energy),
                selected_ions=[ion],
            )
        ]
    if entry.kind != DDA_SPECTRUM:
        return []
    mono, largest, charge, scan, intensity, parent = tables.precursors[entry.precursor]
    pasef = run.pasef_of[entry.precursor]
    mz = mono if mono is not None else largest
    params = []
    if mz is not None:
        params.append(Param.term(V.SELECTED_ION_MZ, float(mz), V.UNIT_MZ))
    if charge is not None:
        params.append(Param.term(V.CHARGE_STATE, int(charge)))
    if intensity is not None:
        params.append(Param.term(V.PEAK_INTENSITY, float(intensity), V.UNIT_DETECTOR_COUNTS))
    if scan is not None:
        value = run.mobility_at(float(scan))
        unit = V.UNIT_VOLT_SECOND_PER_SQUARE_CM
        params.append(Param("inverse reduced ion mobility", _IM, value, unit))
    return [
        PrecursorRecord(
            spectrum_ref=_ms1_id(run, int(parent) - 1) if parent is not None else None,
            isolation_window=_isolation(pasef[3], pasef[4]),
            activation=_activation(pasef[5]),
            selected_ions=[SelectedIonRecord(params)],
        )
    ]


def _ms1_id(run: TdfRun, row: int) -> str | None:
    """The id of the MS1 spectrum of frame ``row``, if that frame is one."""
    position = run.ms1_positions.get(row)
    if position is None:
        return None
    return native_id(run, position, run.tables.entries[position])


def _last_ms1(run: TdfRun, row: int) -> str | None:
    rows = run.ms1_rows
    at = int(np.searchsorted(rows, row)) - 1
    return _ms1_id(run, int(rows[at])) if at >= 0 else None
