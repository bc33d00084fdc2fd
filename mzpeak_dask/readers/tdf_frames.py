"""The frame data of a Bruker timsTOF ``.d`` folder, read through timsrust (``timsrust-pyo3``,
the optional ``bruker`` extra, the only module of the package that imports it).

``analysis.tdf_bin`` holds one packet per frame at the frame's ``TimsId``: a 4-byte packet size,
a 4-byte scan count, then a zstd frame that inflates to ``4 * (scans + 2 * peaks)`` bytes. Each
packet's header and its zstd frame's declared size are checked against the frame's row of
``analysis.tdf`` before timsrust reads it, so that a damaged file gives one line naming the
frame (timsrust itself may abort with a panic on a packet it cannot parse).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ExtraMissingError, InputError
from ..storage.filecache import per_file
from .tdf_tables import MS1_SPECTRUM, TDF, TDF_BIN, TdfTables, read_tables

INSTALL = "pip install 'mzpeak-dask[bruker]'"
_HEADER = struct.Struct("<II")
_ZSTD_HEADER = 18  # the longest zstd frame header
MAX_TOF = 1 << 24  # TOF indices: timsTOF digitizers record about 400,000 samples a spectrum


def timsrust(name: str) -> Any:
    """The ``timsrust_pyo3`` module, or one line saying what to install."""
    try:
        import timsrust_pyo3
    except ImportError:
        raise ExtraMissingError(
            f"{name}: reading a Bruker .d folder needs the 'bruker' extra: {INSTALL}"
        ) from None
    return timsrust_pyo3


@dataclass(slots=True)
class Frame:
    """One frame's peaks: ``scan_offsets`` (scans + 1), ``tof`` and ``intensity`` (peaks)."""

    scan_offsets: np.ndarray
    tof: np.ndarray
    intensity: np.ndarray


class TdfRun:
    """A ``.d`` folder opened once per worker process: its tables, timsrust's frame reader
    and converters, and the frame-data file (for the packet checks)."""

    def __init__(self, path: str, name: str | None = None):
        self.path, self.name = path, name or path
        self.tables: TdfTables = read_tables(path, self.name)
        self._mz = np.zeros(0, dtype=np.float64)  # m/z of TOF index i, as timsrust has it
        self._mobility: np.ndarray | None = None  # 1/K0 of scan i
        entries = self.tables.entries
        # frame row -> position of its MS1 spectrum; a precursor's first PASEF row
        self.ms1_positions = {e.frame: i for i, e in enumerate(entries) if e.kind == MS1_SPECTRUM}
        self.ms1_rows = np.array(sorted(self.ms1_positions), dtype=np.int64)
        self.pasef_of: dict[int, tuple] = {}
        for row in self.tables.pasef:
            self.pasef_of.setdefault(int(row[6]), row)
        tr = timsrust(self.name)
        try:
            self.metadata = tr.Metadata(os.path.join(path, TDF))
            self.reader = tr.FrameReader(path)
        except Exception as exc:  # timsrust's errors are OSErrors with a short text
            raise InputError(f"{self.name}: timsrust cannot open the folder ({exc})") from None
        try:
            # a descriptor kept open for the worker's life (read with pread; not a file
            # object, which warns at the interpreter's exit while the cache still holds it)
            self._bin = os.open(os.path.join(path, TDF_BIN), os.O_RDONLY)
        except OSError as exc:
            raise InputError(f"{self.name}: {TDF_BIN}: cannot read ({exc.strerror})") from None
        self._bin_size = os.fstat(self._bin).st_size

    @property
    def bin_size(self) -> int:
        return self._bin_size

    def close(self) -> None:
        if self._bin >= 0:  # once: the number may belong to another file afterwards
            os.close(self._bin)
            self._bin = -1

    def scan_mobility(self, begin: int, end: int) -> np.ndarray:
        """1/K0 (V·s/cm²) of scans ``[begin, end)``, as timsrust converts them (looked up in
        its conversion of every scan number, made once)."""
        if self._mobility is None:
            most = int(self.tables.frames["NumScans"].max()) + 1
            converted = self.metadata.resolve_scans(list(range(most)))
            self._mobility = np.asarray(converted, dtype=np.float64)
        return self._mobility[begin:end]

    def mobility_at(self, scan: float) -> float:
        """1/K0 at a fractional scan number (a precursor's): timsrust converts whole scans,
        linearly in the scan number, so the value between two scans is interpolated."""
        low = int(np.floor(scan))
        a, b = self.metadata.resolve_scans([low, low + 1])
        return float(a + (scan - low) * (b - a))

    def mz(self, tof: np.ndarray, row: int) -> np.ndarray:
        """m/z of TOF indices (of frame ``row``), as timsrust converts them: looked up in its
        conversion of every TOF index up to the largest seen, made once (a table of at most
        MAX_TOF entries; bench_vendor_bruker: 22 ms a 242,000-peak frame through
        ``resolve_mzs``, 0.4 ms looked up)."""
        if not len(tof):
            return np.zeros(0, dtype=np.float64)
        top = int(tof.max())
        if top >= MAX_TOF:
            raise self._error(row, f"TOF index {top:,} is past the digitizer's {MAX_TOF:,}")
        if top >= len(self._mz):
            size = max(top + 1, self._digitizer_samples())
            self._mz = np.asarray(self.metadata.resolve_mzs(list(range(size))), dtype=np.float64)
        return self._mz[tof]

    def _digitizer_samples(self) -> int:
        try:
            return min(int(self.tables.metadata.get("DigitizerNumSamples", 0)) + 1, MAX_TOF)
        except ValueError:
            return 0

    def frame(self, row: int) -> Frame:
        """Frame ``row`` (0-based; frame id ``row + 1``), checked against its table row."""
        f = self.tables.frames
        scans, peaks = int(f["NumScans"][row]), int(f["NumPeaks"][row])
        if peaks == 0:  # nothing recorded: no packet to read
            empty = np.zeros(0, dtype=np.uint32)
            return Frame(np.zeros(scans + 1, dtype=np.int64), empty, empty)
        self._check_packet(row, int(f["TimsId"][row]), scans, peaks)
        try:
            data = self.reader.read_frame(row)
        except BaseException as exc:  # a pyo3 panic derives from BaseException
            if isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit)):
                raise
            raise self._error(row, f"timsrust cannot read it ({exc})") from None
        # each attribute of timsrust's frame builds a new list: each is taken once
        offsets = np.asarray(data.scan_offsets, dtype=np.int64)
        tof, intensity = data.tof_indices, data.intensities
        tof = np.fromiter(tof, dtype=np.uint32, count=len(tof))
        intensity = np.fromiter(intensity, dtype=np.uint32, count=len(intensity))
        if len(offsets) != scans + 1 or len(tof) != peaks or len(intensity) != peaks:
            raise self._error(row, f"holds {len(tof)} peaks in {len(offsets) - 1} scans, "
                              f"its row declares {peaks} in {scans}")  # fmt: skip
        if offsets[0] != 0 or offsets[-1] != peaks or (np.diff(offsets) < 0).any():
            raise self._error(row, "its scan offsets are not increasing")
        return Frame(offsets, tof, intensity)

    def _check_packet(self, row: int, at: int, scans: int, peaks: int) -> None:
        head = os.pread(self._bin, _HEADER.size + _ZSTD_HEADER, at)
        if len(head) < _HEADER.size + 4:
            raise self._error(row, f"its packet at offset {at} is past the end of {TDF_BIN}")
        size, packet_scans = _HEADER.unpack_from(head)
        if size < _HEADER.size + 4 or at + size > self._bin_size:
            raise self._error(row, f"its packet declares {size:,} bytes at offset {at} of "
                              f"{TDF_BIN} ({self._bin_size:,} bytes)")  # fmt: skip
        if packet_scans != scans:
            raise self._error(row, f"its packet header declares {packet_scans} scans, "
                              f"its row {scans}")  # fmt: skip
        expected = 4 * (scans + 2 * peaks)
        declared = _content_size(head[_HEADER.size :])
        if declared is None:
            raise self._error(row, "its packet is not zstd-compressed data")
        if declared not in (-1, expected):  # -1: not declared; timsrust's lengths are checked
            raise self._error(row, f"its packet decompresses to {declared:,} bytes, its header "
                              f"({scans} scans, {peaks} peaks) to {expected:,}")  # fmt: skip

    def _error(self, row: int, message: str) -> InputError:
        return InputError(f"{self.name}: frame {row + 1}: {message}")


def _content_size(head: bytes) -> int | None:
    """The content size a zstd frame header declares (-1: not declared), None if not zstd."""
    import zstandard

    try:
        return zstandard.frame_content_size(head)
    except zstandard.ZstdError:
        return None


@per_file(4, marker=TDF, close=TdfRun.close)
def open_run(path: str, name: str) -> TdfRun:
    """The ``.d`` folder at ``path``, opened once per worker process (timsrust's readers do
    not pickle); opened afresh when its ``analysis.tdf`` changes."""
    return TdfRun(path, name)
