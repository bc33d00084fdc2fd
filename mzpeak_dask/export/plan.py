"""Planning a run's Zarr export: its chunk grid and per-spectrum metadata, from a cheap pass.

The rectilinear grid must exist before any worker writes, so each run is planned first (one
Dask task per run, on a worker). The plan needs every chunk's length, which the cheap pass gets
without decoding signal:

* **chunked archive**: one chunk per row; its length is the length of the row's plain
  secondary list (e.g. ``intensity``), as the format prescribes (format doc 5.3). A spectrum
  without such a list (only Numpress-transformed secondaries, or a null list) is decoded with
  ``SignalReader.read_chunked`` instead.
* **point archive**: the chunks the chunked layout would make: ``chunk_boundaries`` over the
  stored, null-marked main axis only (exactly what ``read_chunked`` computes), without
  decoding the other arrays or reconstructing nulls.

A spectrum whose data member has no rows is read from the peaks member (as ``open_archive``
does). Empty chunks are dropped (zarr has no zero-length chunks). The writers check that what
they decode matches the plan, chunk by chunk.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from .. import vocabulary as V
from ..archive.container import archive_size
from ..read.archive import cached_archive
from ..read.entity import spectrum_columns
from ..read.signal import SignalReader
from ..transforms.chunking import chunk_boundaries
from ..zarr_runs import PER_CHUNK, PER_SPECTRUM

SHORT_NAMES = {"m/z array": "mz", "intensity array": "intensity"}
RESERVED = {*PER_CHUNK, *PER_SPECTRUM}  # names signal arrays must not take


@dataclass(frozen=True)
class ArraySpec:
    """One signal array of the export: the key ``open_archive`` uses and the Zarr name."""

    key: str  # e.g. "m/z array"
    name: str  # e.g. "mz"
    dtype: str  # numpy dtype string


@dataclass
class RunPlan:
    """What the coordinator needs to create a run's arrays before any worker writes."""

    source: str
    layout: str  # "chunked" or "point"
    arrays: list[ArraySpec]
    chunk_lengths: np.ndarray  # int64, positive: every chunk of the run in index order
    chunk_counts: np.ndarray  # int64: chunks per spectrum
    time: np.ndarray  # minutes, NaN when unknown
    ms_level: np.ndarray  # int16, 0 when unknown
    precursor_mz: np.ndarray  # NaN when none
    sha256: str
    source_bytes: int

    @property
    def spectra(self) -> int:
        return len(self.chunk_counts)

    @property
    def chunk_spectrum_index(self) -> np.ndarray:
        return np.repeat(np.arange(self.spectra, dtype=np.int64), self.chunk_counts)

    @property
    def spectrum_offsets(self) -> np.ndarray:
        points = np.bincount(
            self.chunk_spectrum_index, weights=self.chunk_lengths, minlength=self.spectra
        )
        return np.concatenate(([0], np.cumsum(points))).astype(np.int64)

    def blocks(self, points: int) -> list[tuple[int, int]]:
        """Contiguous spectrum ranges ``[start, stop)`` of about ``points`` points each."""
        offsets = self.spectrum_offsets
        cuts = np.searchsorted(offsets, np.arange(points, offsets[-1], points), side="left")
        bounds = np.unique(np.concatenate(([0], cuts, [self.spectra])))
        return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


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


def _point_lengths(signal: SignalReader, rows: pa.StructArray, width: float) -> np.ndarray:
    column = rows.field(signal.main.columns[V.POINT].column)
    valid = np.asarray(column.is_valid())
    values = column.fill_null(0).to_numpy(zero_copy_only=False)
    return np.diff(chunk_boundaries(values, valid, width, min_points=2))


def _chunked_lengths(signal: SignalReader, rows: pa.StructArray) -> np.ndarray | None:
    """List lengths of the first plain secondary column, or None when that does not give them."""
    entry = next(
        (v.columns[V.CHUNK_SECONDARY] for v in signal.views[1:] if V.CHUNK_SECONDARY in v.columns),
        None,
    )
    if entry is None:
        return None
    column = rows.field(entry.column)
    if column.null_count:
        return None
    return np.diff(column.offsets.to_numpy())


def spectrum_lengths(
    signal: SignalReader, i: int, model: np.ndarray | None, width: float
) -> np.ndarray | None:
    """Chunk lengths of spectrum ``i`` in one member (zero-length chunks included); None when
    the member has no rows for it."""
    rows = signal.rows(i)
    if rows is None or len(rows) == 0:
        return None
    if not signal.chunked:
        return _point_lengths(signal, rows, width)
    lengths = _chunked_lengths(signal, rows)
    if lengths is None:
        _, offsets = signal.read_chunked(i, model, width)
        lengths = np.diff(offsets)
    return lengths


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


def plan_run(path: str, width: float) -> RunPlan:
    """The cheap pass over one archive (a worker task)."""
    archive = cached_archive(path)
    tables = archive.tables_of(V.SPECTRUM)
    data, peaks = archive.signal(V.SPECTRUM), archive.signal(V.SPECTRUM, V.PEAKS)
    n = len(tables)
    lengths, counts = [], np.zeros(n, dtype=np.int64)
    for i in range(n):
        model = tables.models[i]
        found = None if data is None else spectrum_lengths(data, i, _model(model), width)
        if found is None and peaks is not None:
            found = spectrum_lengths(peaks, i, None, width)
        found = np.zeros(0, np.int64) if found is None else found[found > 0]
        lengths.append(found)
        counts[i] = len(found)
    times, levels, precursors = spectrum_columns(tables)
    return RunPlan(
        source=path,
        layout="chunked" if data is not None and data.chunked else "point",
        arrays=array_specs(data, peaks),
        chunk_lengths=np.concatenate([np.zeros(0, np.int64), *lengths]).astype(np.int64),
        chunk_counts=counts,
        time=times,
        ms_level=levels,
        precursor_mz=precursors,
        sha256=archive_sha256(path),
        source_bytes=archive_size(Path(path)),
    )


def _model(model: list | None) -> np.ndarray | None:
    return np.asarray(model) if model else None


__all__ = ["ArraySpec", "RunPlan", "array_specs", "plan_run", "zarr_name"]
