"""Surveying a run before its Zarr export: its arrays, its spectrum table and where its Zarr
chunks are cut, from the archive's metadata alone (nothing is decoded).

The Zarr chunks of a run are runs of whole spectra (hence of whole mzPeak chunks) of about
``chunk_points`` points. Where to cut is decided before anything is decoded, from the Parquet
footers: each row group's count of leaf values (points, in either layout) is spread over the
spectra its index statistics cover, which estimates every spectrum's points; the run is cut
into spectrum ranges of about ``chunk_points`` estimated points. Each range is then decoded
and written by one worker task, and the real grid is known when the tasks are back (a range
that turns out empty makes no Zarr chunk). A big run's chunks grow past ``chunk_points`` so
that the run stays within :data:`RUN_FILES` files (:func:`chunk_target`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..archive.container import archive_size
from ..format import vocabulary as V
from ..read.archive import cached_archive
from ..read.entity import spectrum_columns
from ..read.signal import SignalReader
from ..zarr_runs import TABLES

SHORT_NAMES = {"m/z array": "mz", "intensity array": "intensity"}
RESERVED = set(TABLES)  # names signal arrays must not take


@dataclass(frozen=True)
class ArraySpec:
    """One signal array of the export: the key ``open_archive`` uses and the Zarr name."""

    key: str  # e.g. "m/z array"
    name: str  # e.g. "mz"
    dtype: str  # numpy dtype string


def zarr_name(array_name: str, taken: set[str]) -> str:
    """``m/z array`` -> ``mz``, ``intensity array`` -> ``intensity``, others snake_case without
    the trailing "array"; made unique against ``taken`` and the reserved names."""
    base = SHORT_NAMES.get(array_name)
    if base is None:
        base = re.sub(r"[^0-9a-z]+", "_", array_name.lower().removesuffix(" array")).strip("_")
        base = base or "array"
    name, k = base, 2
    while name in taken or name in RESERVED:
        name, k = f"{base}_{k}", k + 1
    return name


def _view_keys(signal: SignalReader | None) -> list[tuple[str, np.dtype]]:
    """The keys ``SignalReader`` gives the arrays of this member (array name, or
    ``name (k)`` for a repeated name)."""
    if signal is None:
        return []
    out, seen = [], set()
    for k, view in enumerate(signal.views):
        key = view.array_name if view.array_name not in seen else f"{view.array_name} ({k})"
        seen.add(view.array_name)
        out.append((key, view.dtype))
    return out


def array_specs(data: SignalReader | None, peaks: SignalReader | None) -> list[ArraySpec]:
    """Every signal array of the data and peaks members (dtypes promoted across both)."""
    dtypes: dict[str, np.dtype] = {}
    for key, dtype in _view_keys(data) + _view_keys(peaks):
        dtypes[key] = np.result_type(dtypes[key], dtype) if key in dtypes else np.dtype(dtype)
    taken: set[str] = set()
    specs = []
    for key, dtype in dtypes.items():
        name = zarr_name(key, taken)
        taken.add(name)
        specs.append(ArraySpec(key, name, np.dtype(dtype).str))
    return specs


def archive_sha256(path: str | Path) -> str:
    """SHA-256 of an archive file; for an unpacked (directory) archive, of its members' names
    and contents in name order."""
    path = Path(path)
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        if file != path:
            digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        with open(file, "rb") as f:
            while block := f.read(1 << 22):
                digest.update(block)
    return digest.hexdigest()


RUN_FILES = 100  # at most this many files (objects) in one run group
# files of a run besides its signal arrays' chunks: the group's zarr.json, and the zarr.json
# and one chunk of each table (tables of up to TABLE_CHUNK values, i.e. 4 M mzPeak chunks)
FIXED_FILES = 1 + 2 * len(TABLES)


def chunk_target(points: float, arrays: int, chunk_points: int) -> int:
    """Points per Zarr chunk: ``chunk_points``, or more when a run of ``points`` points would
    otherwise make more than :data:`RUN_FILES` files with ``arrays`` signal arrays (each has
    a zarr.json and its chunks)."""
    most = max(1, (RUN_FILES - FIXED_FILES) // max(1, arrays) - 1)
    return max(int(chunk_points), int(np.ceil(points / most)))


@dataclass
class RunSurvey:
    """What the coordinator needs before any worker writes (a worker task's result)."""

    source: str
    layout: str  # "chunked" or "point"
    arrays: list[ArraySpec]
    estimate: np.ndarray  # float64: estimated points per spectrum
    time: np.ndarray  # minutes, NaN when unknown
    ms_level: np.ndarray  # int16, 0 when unknown
    precursor_mz: np.ndarray  # NaN when none
    source_bytes: int

    @property
    def spectra(self) -> int:
        return len(self.time)

    def ranges(self, chunk_points: int) -> list[tuple[int, int]]:
        """Spectrum ranges ``[start, stop)``, one per Zarr chunk, of about ``chunk_points``
        estimated points each (see :func:`chunk_target`)."""
        n = self.spectra
        if n == 0:
            return []
        ends = np.cumsum(self.estimate)
        target = chunk_target(float(ends[-1]), len(self.arrays), chunk_points)
        cuts = np.searchsorted(ends, np.arange(target, ends[-1], target), side="left") + 1
        bounds = np.unique(np.concatenate(([0], np.minimum(cuts, n), [n])))
        return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _estimate(signal: SignalReader | None, n: int) -> np.ndarray:
    """Points per spectrum of one member, estimated from its footer: each row group's most
    numerous leaf column, spread evenly over the spectra its index statistics cover."""
    out = np.zeros(n + 1)
    if signal is None or n == 0:
        return out[:n]
    md = signal.file.metadata
    lows, highs = signal._stats
    for g in range(md.num_row_groups):
        group = md.row_group(g)
        values = max(group.column(j).num_values for j in range(group.num_columns))
        low, high = int(min(lows[g], n - 1)), int(min(highs[g], n - 1))
        out[low] += values / (high - low + 1)
        out[high + 1] -= values / (high - low + 1)
    return np.cumsum(out)[:n]


def survey_run(path: str) -> RunSurvey:
    """The survey of one archive (a worker task): footers and the spectrum table only."""
    archive = cached_archive(path)
    tables = archive.tables_of(V.SPECTRUM)
    data, peaks = archive.signal(V.SPECTRUM), archive.signal(V.SPECTRUM, V.PEAKS)
    n = len(tables)
    times, levels, precursors = spectrum_columns(tables)
    return RunSurvey(
        source=path,
        layout="chunked" if data is not None and data.chunked else "point",
        arrays=array_specs(data, peaks),
        estimate=_estimate(data, n) + _estimate(peaks, n),
        time=times,
        ms_level=levels,
        precursor_mz=precursors,
        source_bytes=archive_size(Path(path)),
    )


__all__ = [
    "ArraySpec",
    "RunSurvey",
    "archive_sha256",
    "array_specs",
    "chunk_target",
    "survey_run",
    "zarr_name",
]
