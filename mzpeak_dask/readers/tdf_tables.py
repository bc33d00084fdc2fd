"""The SQLite half of a Bruker timsTOF ``.d`` folder (``analysis.tdf``): its frames, the
PASEF precursors and diaPASEF windows, its global metadata, and the list of spectra a run
converts to (:class:`Entry`, in acquisition order).

Everything here is plain Python and numpy (the standard library's ``sqlite3``); the frame data
themselves are read through timsrust (:mod:`.tdf_frames`). Every declared size and reference
is checked before anything relies on it: a frame's scans and peaks are bounded, each PASEF or
window row must name a frame of its kind and scans within it.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from urllib.parse import quote

import numpy as np

from ..errors import InputError
from ..storage.inputs import VENDOR_FOLDER_MARKER

TDF = VENDOR_FOLDER_MARKER  # the SQLite file that makes a folder a Bruker run
TDF_BIN = "analysis.tdf_bin"
# MsMsType codes of the Frames table (Bruker's TDF schema)
MS1, DDA_PASEF, DIA_PASEF = 0, 8, 9
MS1_SPECTRUM, DDA_SPECTRUM, DIA_SPECTRUM = "ms1", "dda", "dia"
# bounds on declared sizes: timsTOF frames hold about 1,000 scans and a few million peaks
MAX_SCANS = 1 << 16
MAX_FRAME_BYTES = 1 << 30  # a frame's decompressed packet: 4 * (scans + 2 * peaks) bytes

_FRAME_COLUMNS = (
    "Id", "Time", "Polarity", "MsMsType", "TimsId", "NumScans", "NumPeaks",
    "MaxIntensity", "SummedIntensities",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Entry:
    """One spectrum: its kind, the frames (0-based rows) and scan ranges ``[begin, end)`` it
    is made of, and its PASEF precursor id or diaPASEF window (row of ``windows``)."""

    kind: str
    parts: tuple[tuple[int, int, int], ...]
    precursor: int | None = None
    window: int | None = None

    @property
    def frame(self) -> int:
        return self.parts[0][0]


@dataclass(slots=True)
class TdfTables:
    """The tables of one ``analysis.tdf`` a conversion needs, as numpy columns."""

    name: str
    frames: dict[str, np.ndarray]
    metadata: dict[str, str]
    precursors: dict[int, tuple]  # Id -> (MonoisotopicMz, LargestPeakMz, Charge, ScanNumber,
    #                                     Intensity, Parent)
    pasef: list[tuple]  # (frame row, begin, end, IsolationMz, IsolationWidth, CE, Precursor)
    windows: list[tuple]  # (WindowGroup, begin, end, IsolationMz, IsolationWidth, CE)
    frame_groups: dict[int, int]  # frame row -> WindowGroup
    entries: list[Entry]


def _connect(path: str, name: str) -> sqlite3.Connection:
    tdf = os.path.join(path, TDF)
    if not os.path.isfile(tdf):
        raise InputError(f"{name}: no {TDF} in the folder (not a Bruker timsTOF .d folder)")
    # read-only and immutable: no journal or lock file is made beside a read-only input
    uri = f"file:{quote(os.path.abspath(tdf))}?mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        raise InputError(f"{name}: {TDF} is not a readable SQLite database ({exc})") from None
    return conn


def _rows(conn: sqlite3.Connection, name: str, sql: str, table: str) -> list[tuple]:
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.Error as exc:
        raise InputError(f"{name}: {TDF}: cannot read table {table} ({exc})") from None


def _has(conn: sqlite3.Connection, table: str) -> bool:
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)
    ).fetchone()
    return found is not None


def read_tables(path: str, name: str | None = None) -> TdfTables:
    """The tables of the ``.d`` folder ``path`` (``name``: what errors call it), checked."""
    name = name or path
    conn = _connect(path, name)
    try:
        return _read(conn, path, name)
    finally:
        conn.close()


def _read(conn: sqlite3.Connection, path: str, name: str) -> TdfTables:
    metadata = {
        str(k): "" if v is None else str(v)
        for k, v in _rows(conn, name, "SELECT Key, Value FROM GlobalMetadata", "GlobalMetadata")
    }
    sql = f"SELECT {', '.join(_FRAME_COLUMNS)} FROM Frames ORDER BY Id"
    rows = _rows(conn, name, sql, "Frames")
    frames = _frame_columns(rows, name, _bin_size(path, name))
    precursors, pasef = {}, []
    if _has(conn, "PasefFrameMsMsInfo"):
        precursors = {
            int(r[0]): r[1:]
            for r in _rows(
                conn,
                name,
                "SELECT Id, MonoisotopicMz, LargestPeakMz, Charge, ScanNumber, Intensity, Parent"
                " FROM Precursors",
                "Precursors",
            )
        }
        pasef = _rows(
            conn,
            name,
            "SELECT Frame - 1, ScanNumBegin, ScanNumEnd, IsolationMz, IsolationWidth,"
            " CollisionEnergy, Precursor FROM PasefFrameMsMsInfo ORDER BY Precursor, Frame",
            "PasefFrameMsMsInfo",
        )
    windows, groups = [], {}
    if _has(conn, "DiaFrameMsMsWindows"):
        windows = _rows(
            conn,
            name,
            "SELECT WindowGroup, ScanNumBegin, ScanNumEnd, IsolationMz, IsolationWidth,"
            " CollisionEnergy FROM DiaFrameMsMsWindows ORDER BY WindowGroup, ScanNumBegin",
            "DiaFrameMsMsWindows",
        )
        info = "SELECT Frame - 1, WindowGroup FROM DiaFrameMsMsInfo"
        groups = {int(f): int(g) for f, g in _rows(conn, name, info, "DiaFrameMsMsInfo")}
    tables = TdfTables(name, frames, metadata, precursors, pasef, windows, groups, [])
    tables.entries = _entries(tables)
    return tables


def _bin_size(path: str, name: str) -> int:
    try:
        return os.stat(os.path.join(path, TDF_BIN)).st_size
    except FileNotFoundError:
        raise InputError(f"{name}: {TDF_BIN} is missing") from None
    except OSError as exc:
        raise InputError(f"{name}: {TDF_BIN}: cannot read ({exc.strerror})") from None


def _frame_columns(rows: list[tuple], name: str, bin_size: int) -> dict[str, np.ndarray]:
    if not rows:
        raise InputError(f"{name}: {TDF} has no frames")
    columns = list(zip(*rows, strict=True))
    try:
        ints = {
            c: np.array(columns[i], dtype=np.int64)
            for i, c in enumerate(_FRAME_COLUMNS)
            if c in ("Id", "MsMsType", "TimsId", "NumScans", "NumPeaks")
        }
        time = np.array(columns[1], dtype=np.float64)
        tic = np.array(columns[8], dtype=np.float64)
        bpi = np.array(columns[7], dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InputError(f"{name}: {TDF}: the Frames table holds a bad value ({exc})") from None
    if not np.array_equal(ints["Id"], np.arange(1, len(rows) + 1)):
        raise InputError(f"{name}: {TDF}: frame ids are not 1, 2, 3, ... as TDF numbers them")
    scans, peaks, at = ints["NumScans"], ints["NumPeaks"], ints["TimsId"]
    unpacked = 4 * (scans + 2 * peaks)
    bad = (scans < 1) | (scans > MAX_SCANS) | (peaks < 0) | (unpacked > MAX_FRAME_BYTES)
    bad |= (peaks > 0) & ((at < 0) | (at + 8 > bin_size))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{name}: frame {i + 1}: declares {int(scans[i])} scans and {int(peaks[i])} peaks "
            f"at offset {int(at[i])} of {TDF_BIN} ({bin_size:,} bytes): out of bounds"
        )
    polarity = np.array([p == "-" for p in columns[2]], dtype=bool)
    return {**ints, "Time": time, "Negative": polarity, "SummedIntensities": tic,
            "MaxIntensity": bpi}  # fmt: skip


def _entries(t: TdfTables) -> list[Entry]:
    """The spectra in acquisition order: an MS1 frame is one; a ddaPASEF precursor is one, at
    the first frame that measured it, made of every frame and scan range that did; a
    diaPASEF frame is one per window of its window group."""
    n = len(t.frames["Id"])
    kinds, scans = t.frames["MsMsType"], t.frames["NumScans"]
    by_precursor: dict[int, list[tuple[int, int, int]]] = {}
    for frame, begin, end, _mz, _width, _ce, precursor in t.pasef:
        _check_range(t, int(frame), begin, end, DDA_PASEF, "PasefFrameMsMsInfo")
        by_precursor.setdefault(int(precursor), []).append((int(frame), int(begin), int(end)))
    first: dict[int, list[int]] = {}
    for precursor, parts in sorted(by_precursor.items()):
        if precursor not in t.precursors:
            raise InputError(f"{t.name}: {TDF}: PASEF precursor {precursor} is not in Precursors")
        first.setdefault(min(p[0] for p in parts), []).append(precursor)
    by_group: dict[int, list[int]] = {}
    for row, (group, *_rest) in enumerate(t.windows):
        by_group.setdefault(int(group), []).append(row)
    entries: list[Entry] = []
    for frame in range(n):
        kind = int(kinds[frame])
        if kind == MS1:
            entries.append(Entry(MS1_SPECTRUM, ((frame, 0, int(scans[frame])),)))
        elif kind == DDA_PASEF:
            for precursor in first.get(frame, ()):
                parts = tuple(sorted(by_precursor[precursor]))
                entries.append(Entry(DDA_SPECTRUM, parts, precursor=precursor))
        elif kind == DIA_PASEF:
            group = t.frame_groups.get(frame)
            if group is None or group not in by_group:
                raise InputError(f"{t.name}: frame {frame + 1}: no diaPASEF window group")
            for row in by_group[group]:
                _, begin, end, *_ = t.windows[row]
                _check_range(t, frame, begin, end, DIA_PASEF, "DiaFrameMsMsWindows")
                entries.append(Entry(DIA_SPECTRUM, ((frame, int(begin), int(end)),), window=row))
        else:
            raise InputError(
                f"{t.name}: frame {frame + 1}: MsMsType {kind} is not supported "
                "(MS1, ddaPASEF and diaPASEF are)"
            )
    return entries


def _check_range(t: TdfTables, frame: int, begin: int, end: int, kind: int, table: str) -> None:
    n = len(t.frames["Id"])
    if not 0 <= frame < n or int(t.frames["MsMsType"][frame]) != kind:
        raise InputError(f"{t.name}: {TDF}: {table} names frame {frame + 1}, not one of its kind")
    if not (isinstance(begin, int) and isinstance(end, int)):
        raise InputError(f"{t.name}: frame {frame + 1}: {table} holds scans that are not numbers")
    if not 0 <= begin <= end <= int(t.frames["NumScans"][frame]):
        raise InputError(
            f"{t.name}: frame {frame + 1}: {table} scans {begin}-{end} are outside the frame's "
            f"{int(t.frames['NumScans'][frame])} scans"
        )
