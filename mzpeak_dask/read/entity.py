"""The metadata tables of one entity (spectra, chromatograms, UV spectra) and fast lookups.

Hot per-item fields (id, MS level, time, polarity, representation, spacing model) are turned
into Python lists once; everything else is read from Arrow on demand — a spectrum's scans and
precursors by binary search on their sorted ``source_index`` — so opening is cheap and reading
one spectrum stays well under a millisecond of metadata work.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa

from ..format import vocabulary as V
from ..model.records import Param
from ..tables.params import params_from_rows
from .metadata import find_column, footer_json, row_params, split_packed
from .parquet_checks import damaged, open_parquet
from .spectrum import Precursor


class EntityTables:
    def __init__(self, buffer: pa.Buffer | None, main_table: str, where: str = ""):
        self.where = where  # "ARCHIVE: MEMBER", for errors
        if buffer is None:
            self.tables: dict[str, pa.Table] = {}
            self.footer: dict[str, Any] = {}
        else:
            pf = open_parquet(buffer, where)
            with damaged(where):
                self.tables = split_packed(pf.read(use_threads=False))
                self.footer = footer_json(pf.metadata.metadata)
        table = self.tables.get(main_table)
        if table is not None and "index" in table.column_names and len(table):
            with damaged(where):
                table = table.sort_by("index")
            self.tables[main_table] = table
        self.main = table if table is not None else pa.table({"index": pa.array([], pa.uint64())})
        self.window_bounds = False  # set by the archive for the reference prototype's files
        self._by_id: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.main)

    def values_of(self, accession_or_name: str) -> list:
        """A column of the main table as a list, found by name or by CV accession (None
        for each item when there is no such column)."""
        names = self.main.column_names
        name = (
            accession_or_name
            if accession_or_name in names
            else find_column(names, accession_or_name)
        )
        if name is None:
            return [None] * len(self.main)
        return self.main.column(name).to_pylist()

    @cached_property
    def ids(self) -> list[str]:
        return [str(x) for x in self.values_of("id")]

    @cached_property
    def ms_levels(self) -> list:
        return self.values_of(V.MS_LEVEL)

    @cached_property
    def times(self) -> list:
        times = self.values_of("time")
        if any(t is None for t in times):  # older writers: the first scan's start time
            for i, t in enumerate(times):
                if t is None:
                    scans = self.rows_for("scan", i)
                    name = find_column(list(scans[0]), V.SCAN_START_TIME) if scans else None
                    times[i] = scans[0][name] if name else None
        return times

    @cached_property
    def polarities(self) -> list:
        return self.values_of(V.SCAN_POLARITY)

    @cached_property
    def representations(self) -> list:
        return self.values_of(V.SPECTRUM_REPRESENTATION)

    @cached_property
    def models(self) -> list:
        return self.values_of("mz_delta_model")

    @cached_property
    def auxiliary_counts(self) -> list:
        counts = self.values_of("number_of_auxiliary_arrays")
        return [c or 0 for c in counts]

    def position(self, native_id: str) -> int:
        if self._by_id is None:
            self._by_id = {}
            for i, v in enumerate(self.ids):
                self._by_id.setdefault(v, i)  # duplicated ids (seen in real files): the first
        try:
            return self._by_id[native_id]
        except KeyError:
            raise KeyError(f"no item with id {native_id!r}") from None

    def row(self, position: int) -> dict[str, Any]:
        return self.main.slice(position, 1).to_pylist()[0]

    def params(self, position: int) -> list[Param]:
        with damaged(self.where):
            return row_params(self.row(position))

    def auxiliary(self, position: int) -> list[dict[str, Any]]:
        if not self.auxiliary_counts[position]:
            return []
        return self.main.column("auxiliary_arrays").slice(position, 1).to_pylist()[0] or []

    # -- child tables (scan, precursor, selected_ion, product) ---------------------------------
    @cached_property
    def _sources(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per child table: its source_index sorted, and the row order that sorts it."""
        out = {}
        for name, table in self.tables.items():
            if "source_index" in table.column_names and table is not self.main:
                source = table.column("source_index").to_numpy(zero_copy_only=False)
                order = np.argsort(source, kind="stable")
                out[name] = (source[order], order)
        return out

    def rows_for(self, table_name: str, position: int) -> list[dict[str, Any]]:
        with damaged(self.where):
            return self._rows_for(table_name, position)

    def _rows_for(self, table_name: str, position: int) -> list[dict[str, Any]]:
        found = self._sources.get(table_name)
        if found is None:
            return []
        source, order = found
        a = int(np.searchsorted(source, position, side="left"))
        b = int(np.searchsorted(source, position, side="right"))
        if a == b:
            return []
        table = self.tables[table_name]
        if b - a == 1 or np.all(np.diff(order[a:b]) == 1):
            return table.slice(int(order[a]), b - a).to_pylist()
        return table.take(pa.array(order[a:b])).to_pylist()

    def precursors(self, position: int) -> list[Precursor]:
        with damaged(self.where):
            return self._precursors(position)

    def _precursors(self, position: int) -> list[Precursor]:
        rows = self.rows_for("precursor", position)
        ions = self.rows_for("selected_ion", position)
        if len(ions) == len(rows):  # one ion per precursor, in order (the usual case, SPS too)
            pairs = [(row, [ion]) for row, ion in zip(rows, ions, strict=True)]
        else:
            pairs = [
                (row, [i for i in ions if i.get("precursor_index") == row.get("precursor_index")])
                for row in rows
            ]
        return [precursor_from_rows(row, mine, self.window_bounds) for row, mine in pairs]


def value(row: dict[str, Any], accession: str) -> Any:
    name = find_column(list(row), accession)
    return None if name is None else row.get(name)


def precursor_from_rows(
    row: dict[str, Any], ions: list[dict[str, Any]], bounds: bool = False
) -> Precursor:
    window_row = row.get("isolation_window") or {}
    window = {
        "target": value(window_row, V.ISOLATION_WINDOW_TARGET_MZ),
        "lower_offset": value(window_row, V.ISOLATION_WINDOW_LOWER_OFFSET),
        "upper_offset": value(window_row, V.ISOLATION_WINDOW_UPPER_OFFSET),
        "parameters": params_from_rows(window_row.get("parameters")),
    }
    if bounds:
        _absolute_bounds_to_offsets(window)
    activation = params_from_rows((row.get("activation") or {}).get("parameters"))
    selected = [
        {
            "mz": value(ion, V.SELECTED_ION_MZ),
            "charge": value(ion, V.CHARGE_STATE),
            "intensity": value(ion, V.PEAK_INTENSITY),
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


def spectrum_columns(tables: EntityTables) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per spectrum, as arrays: the time in minutes (NaN when unknown), the MS level (0 when
    unknown) and the precursor m/z (NaN when none; see :func:`precursor_mz`)."""
    times = np.array([np.nan if t is None else t for t in tables.times], dtype=np.float64)
    levels = np.array([0 if x is None else x for x in tables.ms_levels], dtype=np.int16)
    return times, levels, precursor_mz(tables, len(tables))


def precursor_mz(tables: EntityTables, n: int) -> np.ndarray:
    """Per spectrum: the first selected ion's m/z, else the first isolation window's target."""
    out = np.full(n, np.nan)
    precursors = tables.tables.get("precursor")
    if precursors is not None and "isolation_window" in precursors.column_names:
        window = precursors.column("isolation_window").combine_chunks()
        names = [window.type.field(j).name for j in range(window.type.num_fields)]
        name = find_column(names, V.ISOLATION_WINDOW_TARGET_MZ)
        if name is not None:
            _first_per_spectrum(out, precursors.column("source_index"), window.field(name))
    ions = tables.tables.get("selected_ion")
    name = None if ions is None else find_column(ions.column_names, V.SELECTED_ION_MZ)
    if name is not None:
        _first_per_spectrum(out, ions.column("source_index"), ions.column(name))
    return out


def _first_per_spectrum(out: np.ndarray, source: pa.Array, values: pa.Array) -> None:
    source = np.asarray(source.to_numpy(zero_copy_only=False), dtype=np.int64)
    values = np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float64)
    order = np.argsort(source, kind="stable")
    source, values = source[order], values[order]
    keep = np.isfinite(values) & (source >= 0) & (source < len(out))
    spectra, first = np.unique(source[keep], return_index=True)
    out[spectra] = values[keep][first]
