"""Small Bruker timsTOF ``.d`` folders written by the tests: ``analysis.tdf`` (SQLite) and
``analysis.tdf_bin`` (one zstd-compressed, byte-transposed packet per frame).

A packet at a frame's ``TimsId`` is a little-endian ``uint32`` packet size (with this 8-byte
header), a ``uint32`` scan count, then a zstd frame of ``scans + 2 * peaks`` 32-bit words
stored byte plane by byte plane (every word's first byte, then every second byte, ...):
word 0 the scan count, words 1 .. scans - 1 twice the peak count of scans 0 .. scans - 2,
then per peak its TOF index step within its scan (the first one plus one) and its intensity.
"""

from __future__ import annotations

import sqlite3
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import zstandard


@dataclass
class SynthFrame:
    """One frame: its MsMsType (0 MS1, 8 ddaPASEF, 9 diaPASEF) and per scan ``(tof, counts)``."""

    msms_type: int
    scans: list[tuple[list[int], list[int]]]
    time: float = 0.0
    polarity: str = "+"

    @property
    def peaks(self) -> int:
        return sum(len(t) for t, _ in self.scans)


@dataclass
class SynthRun:
    frames: list[SynthFrame]
    # (frame id, scan begin, scan end, isolation m/z, width, collision energy, precursor id)
    pasef: list[tuple] = field(default_factory=list)
    # precursor id -> (monoisotopic m/z, charge, scan number, intensity, parent frame id)
    precursors: dict[int, tuple] = field(default_factory=dict)
    # (window group, begin, end, isolation m/z, width, collision energy); frame id -> group
    windows: list[tuple] = field(default_factory=list)
    frame_groups: dict[int, int] = field(default_factory=dict)


def packet(frame: SynthFrame) -> bytes:
    """The frame's packet in ``analysis.tdf_bin``."""
    n = len(frame.scans)
    words = [n] + [2 * len(t) for t, _ in frame.scans[:-1]]
    for tofs, counts in frame.scans:
        previous = -1
        for tof, count in zip(tofs, counts, strict=True):
            words += [tof - previous, count]
            previous = tof
    raw = np.array(words, dtype="<u4").view(np.uint8).reshape(-1, 4).T.copy().tobytes()
    body = zstandard.ZstdCompressor().compress(raw)  # declares its content size
    return struct.pack("<II", len(body) + 8, n) + body


def write_run(folder: Path, run: SynthRun, *, packets: dict[int, bytes] | None = None) -> Path:
    """Write ``run`` as the ``.d`` folder ``folder`` (``packets``: frame id -> bytes written
    instead of that frame's packet)."""
    folder.mkdir(parents=True)
    blob, offsets = bytearray(), []
    for number, frame in enumerate(run.frames, start=1):
        offsets.append(len(blob))
        blob += (packets or {}).get(number) or packet(frame)
    (folder / "analysis.tdf_bin").write_bytes(bytes(blob))
    db = sqlite3.connect(folder / "analysis.tdf")
    db.executescript(_SCHEMA)
    scan_count = max(len(f.scans) for f in run.frames)
    for number, (frame, at) in enumerate(zip(run.frames, offsets, strict=True), start=1):
        counts = [c for _, cs in frame.scans for c in cs]
        db.execute(
            "INSERT INTO Frames VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (number, frame.time or number * 0.1, frame.polarity, 8, frame.msms_type, at,
             max(counts, default=0), sum(counts), len(frame.scans), frame.peaks, 100.0, 100.0),
        )  # fmt: skip
    for key, value in {
        "TimsCompressionType": "2", "MaxNumPeaksPerScan": "100", "DigitizerNumSamples": "400000",
        "MzAcqRangeLower": "100.0", "MzAcqRangeUpper": "1700.0", "AcquisitionSoftware": "timsTOF",
        "OneOverK0AcqRangeLower": "0.6", "OneOverK0AcqRangeUpper": "1.6",
        "InstrumentName": "timsTOF Pro", "InstrumentSerialNumber": "0000.1",
        "InstrumentSourceType": "11", "SampleName": "synthetic",
    }.items():  # fmt: skip
        db.execute("INSERT INTO GlobalMetadata VALUES (?, ?)", (key, value))
    db.executemany("INSERT INTO PasefFrameMsMsInfo VALUES (?,?,?,?,?,?,?)", run.pasef)
    db.executemany(
        "INSERT INTO Precursors VALUES (?,?,?,?,?,?,?,?)",
        [(p, mz + 0.2, mz + 0.1, mz, z, scan, i, parent)
         for p, (mz, z, scan, i, parent) in run.precursors.items()],
    )  # fmt: skip
    db.executemany("INSERT INTO DiaFrameMsMsWindows VALUES (?,?,?,?,?,?)", run.windows)
    db.executemany("INSERT INTO DiaFrameMsMsInfo VALUES (?,?)", run.frame_groups.items())
    db.commit()
    db.close()
    assert scan_count > 0
    return folder


_SCHEMA = """
CREATE TABLE GlobalMetadata (Key TEXT PRIMARY KEY, Value TEXT);
CREATE TABLE Frames (Id INTEGER PRIMARY KEY, Time REAL, Polarity CHAR(1), ScanMode INTEGER,
  MsMsType INTEGER, TimsId INTEGER, MaxIntensity INTEGER, SummedIntensities INTEGER,
  NumScans INTEGER, NumPeaks INTEGER, AccumulationTime REAL, RampTime REAL);
CREATE TABLE PasefFrameMsMsInfo (Frame INTEGER, ScanNumBegin INTEGER, ScanNumEnd INTEGER,
  IsolationMz REAL, IsolationWidth REAL, CollisionEnergy REAL, Precursor INTEGER);
CREATE TABLE Precursors (Id INTEGER PRIMARY KEY, LargestPeakMz REAL, AverageMz REAL,
  MonoisotopicMz REAL, Charge INTEGER, ScanNumber REAL, Intensity REAL, Parent INTEGER);
CREATE TABLE DiaFrameMsMsWindows (WindowGroup INTEGER, ScanNumBegin INTEGER,
  ScanNumEnd INTEGER, IsolationMz REAL, IsolationWidth REAL, CollisionEnergy REAL);
CREATE TABLE DiaFrameMsMsInfo (Frame INTEGER PRIMARY KEY, WindowGroup INTEGER);
"""


def dda_run() -> SynthRun:
    """Four frames over five scans: an MS1 frame with an empty scan, a ddaPASEF frame with two
    precursors, an MS1 frame with no peaks at all, and a ddaPASEF frame measuring precursor 2
    again (its spectrum combines both frames) beside precursor 3."""
    ms1 = SynthFrame(0, [([10, 2000], [5, 7]), ([], []), ([15, 16, 90000], [1, 2, 3]),
                         ([70000], [9]), ([300000, 300001], [4, 4])])  # fmt: skip
    dda = SynthFrame(8, [([100], [11]), ([5000, 6000], [12, 13]), ([], []), ([7000], [14]),
                         ([8000, 8100], [15, 16])])  # fmt: skip
    empty = SynthFrame(0, [([], [])] * 5)
    again = SynthFrame(8, [([120], [21]), ([5000], [22]), ([9000], [23]), ([], []),
                           ([20000, 30000], [24, 25])])  # fmt: skip
    return SynthRun(
        frames=[ms1, dda, empty, again],
        pasef=[(2, 0, 2, 500.5, 2.0, 30.0, 1), (2, 2, 5, 601.0, 2.0, 35.0, 2),
               (4, 3, 5, 601.0, 2.0, 35.0, 2), (4, 0, 3, 702.0, 3.0, 40.0, 3)],
        precursors={1: (500.25, 2, 1.0, 1000.0, 1), 2: (600.75, 3, 3.5, 2000.0, 1),
                    3: (701.9, None, 1.5, 500.0, 3)},
    )  # fmt: skip
