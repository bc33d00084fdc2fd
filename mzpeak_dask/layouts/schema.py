"""Which signal arrays of a run become data columns, under which names and types; and one
item's signal prepared for a layout (:class:`PreparedSignal`).

The column set must be fixed before workers start (every partition writes the same Parquet
schema), so it is derived from a deterministic sample of the run's spectra. An array that later
turns up with no column, a different length than the main axis, or a data type its column
cannot hold exactly, is stored as an auxiliary array instead: nothing is lost either way.

Column names follow the reference writer (format doc section 2.1): the first array of each type
gets the short name (``mz``, ``intensity``, ...), further arrays of the same type are named
``{type}_{dtype}_{unit}``, and non-standard arrays are named after their own name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from ..format import vocabulary as V
from ..model.records import SignalArray

_NAME_CHARS = re.compile(r"[/ .]")
MAIN_AXIS = {
    V.SPECTRUM: (V.MZ_ARRAY, "m/z array", V.UNIT_MZ),
    V.CHROMATOGRAM: (V.TIME_ARRAY, "time array", V.UNIT_MINUTE),
    V.WAVELENGTH_SPECTRUM: (V.WAVELENGTH_ARRAY, "wavelength array", V.UNIT_NANOMETER),
}
_INTENSITY = (V.INTENSITY_ARRAY, "intensity array", V.UNIT_DETECTOR_COUNTS)


@dataclass(frozen=True, slots=True)
class SignalColumn:
    """One data column: the kind of array it holds and how it is stored."""

    array_type: str
    array_name: str
    unit: str | None
    dtype: str  # numpy dtype string, e.g. "<f8"
    name: str  # column name inside the layout struct
    sorting_rank: int | None = None
    primary: bool = True
    null_marked: bool = False  # zero-intensity pairs are stored as nulls (format doc 5.2)

    @property
    def key(self) -> tuple[str, str, str | None]:
        return array_key(self.array_type, self.array_name, self.unit)

    @property
    def data_type(self) -> str:
        return V.dtype_accession(np.dtype(self.dtype))


def array_key(array_type: str, name: str, unit: str | None) -> tuple[str, str, str | None]:
    return (array_type, name if array_type == V.NON_STANDARD_ARRAY else "", unit)


def _short_name(array_type: str, name: str) -> str:
    if array_type == V.NON_STANDARD_ARRAY:
        return _NAME_CHARS.sub("_", name)
    if array_type in V.ARRAY_SHORT_NAME:
        return V.ARRAY_SHORT_NAME[array_type]
    base = V.ARRAY_TYPES.get(array_type, name).removesuffix(" array")
    return _NAME_CHARS.sub("_", base)


def _secondary_name(array_type: str, name: str, dtype: np.dtype, unit: str | None) -> str:
    code = V.DTYPE_CODE[V.dtype_accession(dtype)]
    unit_code = V.UNIT_CODE.get(unit or "", (unit or "none").replace(":", "_").lower())
    return f"{_short_name(array_type, name)}_{code}_{unit_code}"


def _wider(a: np.dtype, b: np.dtype) -> np.dtype:
    """The dtype that holds both exactly (f32 + f64 -> f64, i32 + i64 -> i64, int + float ->
    f64); a mix that cannot hold both exactly keeps the first (the other goes auxiliary)."""
    if a == b:
        return a
    kinds = {a.kind, b.kind}
    if kinds <= {"f"} or kinds <= {"i"}:
        return max(a, b, key=lambda d: d.itemsize)
    return a


@dataclass(frozen=True, slots=True)
class SignalSchema:
    """The data columns of one entity (spectrum, chromatogram, wavelength spectrum)."""

    entity: str
    columns: tuple[SignalColumn, ...]

    @property
    def main(self) -> SignalColumn:
        return self.columns[0]

    @property
    def index_column(self) -> str:
        """The item index column of the layout struct (``spectrum_index`` ...)."""
        return f"{V.CONTEXT[self.entity]}_index"

    @property
    def intensity(self) -> SignalColumn | None:
        return next((c for c in self.columns if c.array_type == V.INTENSITY_ARRAY), None)

    def for_peaks(self, source_centroids: bool) -> SignalSchema:
        """The columns of ``spectra_peaks.parquet``: the same arrays, never null-marked.

        Picked peaks (apex estimates, not source values) get float64 m/z and float32
        intensities; when source centroid spectra are stored there too, the intensity keeps
        a type that holds them exactly."""
        columns = []
        for c in self.columns:
            dtype = c.dtype
            if c.primary and c.array_type == V.MZ_ARRAY:
                dtype = "<f8"
            elif c.primary and c.array_type == V.INTENSITY_ARRAY and not source_centroids:
                dtype = "<f4"
            columns.append(replace(c, null_marked=False, dtype=dtype))
        return SignalSchema(self.entity, tuple(columns))

    def column_for(self, array: SignalArray) -> SignalColumn | None:
        key = array_key(array.array_type, array.name, array.unit)
        return next((c for c in self.columns if c.key == key), None)

    @classmethod
    def from_sample(
        cls, entity: str, sample: list[list[SignalArray]], *, null_marking: bool = False
    ) -> SignalSchema:
        """Columns for every array kind seen in ``sample`` (one list of arrays per item).

        The main axis and intensity always come first; other kinds follow in order of first
        appearance. Arrays that are auxiliary in the sample (a length different from the main
        axis) do not get columns.
        """
        main_type, main_name, main_unit = MAIN_AXIS[entity]
        kinds: dict[tuple, tuple[SignalArray, np.dtype]] = {}
        for arrays in sample:
            main = next((a for a in arrays if a.array_type == main_type), None)
            length = len(main.values) if main is not None else None
            for a in arrays:
                if length is not None and len(a.values) != length:
                    continue
                key = array_key(a.array_type, a.name, a.unit)
                dtype = np.dtype(a.values.dtype).newbyteorder("<")
                if dtype.kind not in "fi" or dtype.itemsize not in (4, 8):
                    continue
                seen = kinds.get(key)
                kinds[key] = (a, dtype if seen is None else _wider(seen[1], dtype))
        main_key = next((k for k in kinds if k[0] == main_type), None)
        intensity_key = next((k for k in kinds if k[0] == V.INTENSITY_ARRAY), None)
        order = [k for k in (main_key, intensity_key) if k is not None]
        order += [k for k in kinds if k not in order]
        columns: list[SignalColumn] = []
        if main_key is None:
            columns.append(SignalColumn(main_type, main_name, main_unit, "<f8", "", 0))
        if intensity_key is None:
            columns.append(SignalColumn(*_INTENSITY, "<f8", ""))
        seen_types: set[str] = set()
        for key in order:
            a, dtype = kinds[key]
            columns.append(
                SignalColumn(
                    a.array_type, a.name, a.unit, dtype.str, "", 0 if key == main_key else None
                )
            )
        named = []
        for c in sorted(columns, key=lambda c: c.sorting_rank != 0):
            primary = c.array_type not in seen_types
            seen_types.add(c.array_type)
            name = (
                _short_name(c.array_type, c.array_name)
                if primary
                else _secondary_name(c.array_type, c.array_name, np.dtype(c.dtype), c.unit)
            )
            marked = null_marking and primary and c.array_type in (main_type, V.INTENSITY_ARRAY)
            named.append(replace(c, name=name, primary=primary, null_marked=marked))
        return cls(entity, tuple(named))


@dataclass(slots=True)
class PreparedSignal:
    """One item's signal, ready for a layout: values per column (already in the column's
    dtype), the validity of the null-marked columns, and the number of points."""

    index: int
    values: dict[str, np.ndarray]
    valid: np.ndarray | None
    length: int
    profile: bool = False
    model: list[float] | None = None  # the mz_delta_model of a null-marked item
    ordered: bool = True  # the non-null main-axis values are ascending
