"""``open_archive``: any mzPeak archive (ZIP or directory, ours or another writer's).

The spectrum metadata member is loaded whole (it is small); signal is read per spectrum, with
row-group pruning, through :class:`~mzpeak_dask.read.signal.SignalReader`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import vocabulary as V
from ..errors import ArchiveError
from ..records import Param
from ..tables.params import params_from_rows
from .metadata import find_column, footer_json, row_params, split_packed
from .signal import SignalReader
from .spectrum import Chromatogram, Precursor, Spectrum
from .storage import ArchiveStorage

_COUNT_KEYS = ("_count", "_data_point_count", "_array_index")


class _Entity:
    """The metadata tables and signal reader of one entity (spectra, chromatograms, ...)."""

    def __init__(self, archive: MzPeakArchive, entity: str, main_table: str):
        self.archive = archive
        self.entity = entity
        member = archive.member(entity, V.METADATA)
        if member is None:
            self.tables: dict[str, pa.Table] = {}
            self.footer: dict[str, Any] = {}
        else:
            pf = pq.ParquetFile(pa.BufferReader(archive.storage.buffer(member)))
            self.tables = split_packed(pf.read(use_threads=False))
            self.footer = footer_json(pf.metadata.metadata)
        table = self.tables.get(main_table)
        if table is not None and "index" in table.column_names and len(table):
            table = table.sort_by("index")
            self.tables[main_table] = table
        self.main = table if table is not None else pa.table({"index": pa.array([], pa.uint64())})
        self.ids = (
            [str(x) for x in self.main.column("id").to_pylist()]
            if "id" in self.main.column_names
            else []
        )
        self._by_id: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.main)

    def position(self, native_id: str) -> int:
        if self._by_id is None:
            self._by_id = {}
            for i, v in enumerate(self.ids):
                self._by_id.setdefault(v, i)  # duplicated ids (seen in real files): the first
        try:
            return self._by_id[native_id]
        except KeyError:
            raise KeyError(f"no {self.entity} with id {native_id!r}") from None

    def column(self, accession_or_name: str) -> list | None:
        names = self.main.column_names
        name = (
            accession_or_name
            if accession_or_name in names
            else find_column(names, accession_or_name)
        )
        return None if name is None else self.main.column(name).to_pylist()

    @cached_property
    def signal(self) -> SignalReader | None:
        member = self.archive.member(self.entity, V.DATA_ARRAYS)
        if member is None:
            return None
        return SignalReader(self.archive.storage.buffer(member), V.CONTEXT[self.entity], member)

    def row(self, position: int) -> dict[str, Any]:
        return self.main.slice(position, 1).to_pylist()[0]

    def grouped(self, table_name: str) -> dict[int, list[dict[str, Any]]]:
        table = self.tables.get(table_name)
        out: dict[int, list[dict[str, Any]]] = defaultdict(list)
        if table is None or "source_index" not in table.column_names:
            return out
        for row in table.to_pylist():
            out[int(row["source_index"])].append(row)
        return out


class MzPeakArchive:
    """A read-only view of one mzPeak archive."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.storage = ArchiveStorage(self.path)
        entries, self.index_metadata = self.storage.index()
        self._members = {(e.entity_type, e.data_kind): e.name for e in entries}
        if (
            self.member(V.SPECTRUM, V.METADATA) is None
            and self.member(V.CHROMATOGRAM, V.METADATA) is None
        ):
            raise ArchiveError(f"{self.path}: no spectrum or chromatogram metadata member")
        self._spectra = _Entity(self, V.SPECTRUM, "spectrum")
        index = self._spectra.main.column("index").to_numpy() if len(self._spectra) else []
        if len(index) and not np.array_equal(index, np.arange(len(index))):
            raise ArchiveError(f"{self.path}: spectrum indices are not 0..n-1")

    # -- members and file-level metadata ---------------------------------------------------------
    def member(self, entity: str, kind: str) -> str | None:
        name = self._members.get((entity, kind))
        if name is None and not self._members:
            name = V.MEMBER_NAMES.get((entity, kind))
        return name if name is not None and name in self.storage else None

    @property
    def members(self) -> dict[str, int]:
        return {name: self.storage.size(name) for name in self.storage.names}

    @cached_property
    def file_metadata(self) -> dict[str, Any]:
        """The file-level metadata (file description, instruments, software, ...) as dicts."""
        footer = self._spectra.footer or self._chromatograms.footer
        out = {k: v for k, v in footer.items() if not k.endswith(_COUNT_KEYS)}
        for key, value in self.index_metadata.items():
            out.setdefault(key, value)
        return out

    # -- spectra ----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._spectra)

    def __getitem__(self, i: int | slice) -> Spectrum | list[Spectrum]:
        if isinstance(i, slice):
            return [self.read_spectrum(k) for k in range(*i.indices(len(self)))]
        return self.read_spectrum(i)

    def __iter__(self) -> Iterator[Spectrum]:
        for i in range(len(self)):
            yield self.read_spectrum(i)

    def get_by_id(self, native_id: str) -> Spectrum:
        return self.read_spectrum(self._spectra.position(native_id))

    def read_spectrum(self, i: int) -> Spectrum:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"spectrum index {i} out of range (0..{n - 1})")
        row = self._spectra.row(i)
        model = row.get("mz_delta_model")
        signal = self._spectra.signal
        arrays = signal.read(i, np.asarray(model) if model else None) if signal else {}
        for aux in row.get("auxiliary_arrays") or ():
            from ..tables.auxiliary import decode_auxiliary

            decoded = decode_auxiliary(aux)
            arrays.setdefault(decoded.name, decoded.values)
        return Spectrum(
            index=i,
            id=str(row.get("id")),
            ms_level=_ms_level(row),
            time=self._time(i, row),
            arrays=arrays,
            params=row_params(row),
            scans=self._scans.get(i, []),
            precursors=self._precursors(i),
            polarity=_value(row, V.SCAN_POLARITY),
            representation=_value(row, V.SPECTRUM_REPRESENTATION),
        )

    def _time(self, i: int, row: dict[str, Any]) -> float | None:
        if row.get("time") is not None:
            return float(row["time"])
        for scan in self._scans.get(i, []):
            name = find_column(list(scan), V.SCAN_START_TIME)
            if name and scan.get(name) is not None:
                return float(scan[name])
        return None

    @cached_property
    def _scans(self) -> dict[int, list[dict[str, Any]]]:
        return self._spectra.grouped("scan")

    @cached_property
    def _selected_ions(self) -> dict[int, list[dict[str, Any]]]:
        return self._spectra.grouped("selected_ion")

    @cached_property
    def _precursor_rows(self) -> dict[int, list[dict[str, Any]]]:
        return self._spectra.grouped("precursor")

    @cached_property
    def _window_bounds(self) -> bool:
        """Whether isolation windows hold absolute bounds in their offset columns: the
        reference prototype writer does that (format doc 9 #10); the specification and this
        package write offsets."""
        for software in self.file_metadata.get("software_list", []):
            texts = [str(software.get("id"))] + [
                str(p.get("value")) for p in software.get("parameters", [])
            ]
            if any(t.startswith("mzpeak_prototyping") for t in texts):
                return True
        return False

    def _precursors(self, i: int) -> list[Precursor]:
        rows = self._precursor_rows.get(i, [])
        ions = self._selected_ions.get(i, [])
        if len(ions) == len(rows):  # one ion per precursor, in order (the usual case, SPS too)
            return [
                precursor_from_rows(row, [ion], self._window_bounds)
                for row, ion in zip(rows, ions, strict=True)
            ]
        out = []
        for row in rows:
            mine = [ion for ion in ions if ion.get("precursor_index") == row.get("precursor_index")]
            out.append(precursor_from_rows(row, mine, self._window_bounds))
        return out

    # -- tables -----------------------------------------------------------------------------------
    def table(self, name: str, *, entity: str = V.SPECTRUM, pandas: bool = False) -> Any:
        """A metadata table (``spectrum``, ``scan``, ``precursor``, ``selected_ion``,
        ``chromatogram``, ...) as Arrow, or pandas with ``pandas=True``."""
        tables = self._entity(entity).tables
        if name not in tables:
            raise KeyError(f"no {name} table for {entity}s in {self.path}")
        return tables[name].to_pandas() if pandas else tables[name]

    @property
    def spectra(self) -> pa.Table:
        return self._spectra.main

    @cached_property
    def _chromatograms(self) -> _Entity:
        return _Entity(self, V.CHROMATOGRAM, "chromatogram")

    @cached_property
    def _wavelength(self) -> _Entity:
        return _Entity(self, V.WAVELENGTH_SPECTRUM, "spectrum")

    def _entity(self, entity: str) -> _Entity:
        return {
            V.SPECTRUM: self._spectra,
            V.CHROMATOGRAM: self._chromatograms,
            V.WAVELENGTH_SPECTRUM: self._wavelength,
        }[entity]

    @property
    def chromatograms(self) -> pa.Table:
        return self._chromatograms.main

    @property
    def chromatogram_count(self) -> int:
        return len(self._chromatograms)

    def read_chromatogram(self, i: int) -> Chromatogram:
        entity = self._chromatograms
        if not 0 <= i < len(entity):
            raise IndexError(f"chromatogram index {i} out of range")
        row = entity.row(i)
        arrays = entity.signal.read(i, None) if entity.signal else {}
        return Chromatogram(
            index=i,
            id=str(row.get("id")),
            arrays=arrays,
            params=row_params(row),
            chromatogram_type=_value(row, V.CHROMATOGRAM_TYPE),
        )

    @property
    def wavelength_spectrum_count(self) -> int:
        return len(self._wavelength)

    def read_wavelength_spectrum(self, i: int) -> Spectrum:
        entity = self._wavelength
        row = entity.row(i)
        arrays = entity.signal.read(i, None) if entity.signal else {}
        return Spectrum(
            index=i,
            id=str(row.get("id")),
            ms_level=None,
            time=row.get("time"),
            arrays=arrays,
            params=row_params(row),
        )

    # -- lifecycle --------------------------------------------------------------------------------
    def close(self) -> None:
        self.storage.close()

    def __enter__(self) -> MzPeakArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MzPeakArchive({str(self.path)!r}, spectra={len(self)})"


def _value(row: dict[str, Any], accession: str) -> Any:
    name = find_column(list(row), accession)
    return None if name is None else row.get(name)


def _ms_level(row: dict[str, Any]) -> int | None:
    value = _value(row, V.MS_LEVEL)
    return None if value is None else int(value)


def precursor_from_rows(
    row: dict[str, Any], ions: list[dict[str, Any]], bounds: bool = False
) -> Precursor:
    window_row = row.get("isolation_window") or {}
    window = {
        "target": _value(window_row, V.ISOLATION_WINDOW_TARGET_MZ),
        "lower_offset": _value(window_row, V.ISOLATION_WINDOW_LOWER_OFFSET),
        "upper_offset": _value(window_row, V.ISOLATION_WINDOW_UPPER_OFFSET),
        "parameters": params_from_rows(window_row.get("parameters")),
    }
    if bounds:
        _absolute_bounds_to_offsets(window)
    activation = params_from_rows((row.get("activation") or {}).get("parameters"))
    selected = [
        {
            "mz": _value(ion, V.SELECTED_ION_MZ),
            "charge": _value(ion, V.CHARGE_STATE),
            "intensity": _value(ion, V.PEAK_INTENSITY),
            "ion_mobility": ion.get("ion_mobility_value", ion.get("ion_mobility")),
            "ion_mobility_type": ion.get("ion_mobility_type"),
            "params": row_params(ion),
        }
        for ion in ions
    ]
    index = row.get("precursor_index")
    return Precursor(
        None if index is None else int(index), row.get("precursor_id"), window, activation, selected
    )


def _absolute_bounds_to_offsets(window: dict[str, Any]) -> None:
    """Turn absolute bounds back into offsets; when the "lower offset" is below half the
    target the values already are offsets (format doc 9 #10)."""
    target, lower, upper = window["target"], window["lower_offset"], window["upper_offset"]
    if target and lower is not None and upper is not None and lower > target / 2:
        window["lower_offset"] = target - lower
        window["upper_offset"] = upper - target


def open_archive(path: str | Path) -> MzPeakArchive:
    """Open an mzPeak archive (a ``.mzpeak`` ZIP or an unpacked directory)."""
    return MzPeakArchive(path)


__all__ = ["MzPeakArchive", "Param", "open_archive"]
