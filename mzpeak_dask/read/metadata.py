"""Reading packed metadata members: split the side-by-side tables, find columns by meaning.

A table's rows are the rows whose key (``index`` / ``source_index``) is non-null (the rest is
padding). Columns are found by CV accession — through the inflected ``MS_1000511_…`` names, the
specification's canonical short names, and the names older reference builds used — so the
reader accepts every writer seen so far (format doc sections 1.4, 2.4 and 9).
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..format import cv
from ..format import vocabulary as V
from ..model.records import Param
from ..tables.chromatogram_metadata import CHROMATOGRAM_TYPE
from ..tables.columns import TermColumn, parse_inflected
from ..tables.params import params_from_rows
from ..tables.spectrum_metadata import POLARITY, REPRESENTATION, SPECTRUM_TYPE

KEYS = ("index", "source_index")
# canonical (August 2026 specification) and legacy names, per accession
ALIASES = {
    V.MS_LEVEL: ("ms_level",),
    V.SCAN_POLARITY: ("scan_polarity", "polarity"),
    V.SPECTRUM_REPRESENTATION: ("spectrum_representation", "mz_signal_continuity"),
    V.SPECTRUM_TYPE: ("spectrum_type",),
    V.SCAN_START_TIME: ("scan_start_time",),
    V.SELECTED_ION_MZ: ("selected_ion_mz",),
    V.CHARGE_STATE: ("charge_state",),
    V.PEAK_INTENSITY: ("intensity",),
    V.ISOLATION_WINDOW_TARGET_MZ: ("isolation_window_target_mz", "target"),
    V.ISOLATION_WINDOW_LOWER_OFFSET: ("isolation_window_lower_offset", "lower_bound"),
    V.ISOLATION_WINDOW_UPPER_OFFSET: ("isolation_window_upper_offset", "upper_bound"),
    V.SCAN_WINDOW_LOWER_LIMIT: ("scan_window_lower_limit", "lower_limit"),
    V.SCAN_WINDOW_UPPER_LIMIT: ("scan_window_upper_limit", "upper_limit"),
    V.CHROMATOGRAM_TYPE: ("chromatogram_type",),
}
TERM_COLUMNS: dict[str, TermColumn] = {
    V.SCAN_POLARITY: POLARITY,
    V.SPECTRUM_REPRESENTATION: REPRESENTATION,
    V.SPECTRUM_TYPE: SPECTRUM_TYPE,
    V.CHROMATOGRAM_TYPE: CHROMATOGRAM_TYPE,
}
STRUCTURAL = {
    "index",
    "id",
    "time",
    "source_index",
    "precursor_index",
    "precursor_id",
    "data_processing_ref",
    "data_processing_id",
    "parameters",
    "auxiliary_arrays",
    "number_of_auxiliary_arrays",
    "mz_delta_model",
    "instrument_configuration_ref",
    "instrument_configuration_id",
    "scan_windows",
    "isolation_window",
    "activation",
    "ion_mobility_value",
    "ion_mobility_type",
    "ion_mobility",
    "spectrum_time",
}


def split_packed(table: pa.Table) -> dict[str, pa.Table]:
    """``{struct name: its rows as a flat table}``, padding rows dropped."""
    out = {}
    for name in table.column_names:
        column = table.column(name)
        if not pa.types.is_struct(column.type):
            continue
        struct = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        if isinstance(struct, pa.ChunkedArray):
            struct = struct.combine_chunks()
        fields = list(struct.type)
        flat = pa.Table.from_arrays(struct.flatten(), schema=pa.schema(fields))
        key = next((k for k in KEYS if k in flat.column_names), fields[0].name if fields else None)
        if key is not None and len(flat):
            flat = flat.filter(pc.is_valid(flat.column(key)))
        out[name] = flat
    return out


def find_column(names: list[str], accession: str) -> str | None:
    """The column holding ``accession``: inflected name first, then known aliases."""
    for name in names:
        parsed = parse_inflected(name)
        if parsed is not None and parsed[0] == accession:
            return name
    for alias in ALIASES.get(accession, ()):
        if alias in names:
            return alias
    return None


def footer_json(metadata: dict[bytes, bytes] | None) -> dict[str, Any]:
    """The JSON-valued key-value pairs of a Parquet footer, parsed."""
    out: dict[str, Any] = {}
    for key, value in (metadata or {}).items():
        k = key.decode("utf-8", "replace")
        if k == "ARROW:schema":
            continue
        try:
            out[k] = json.loads(value)
        except ValueError:
            out[k] = value.decode("utf-8", "replace")
    return out


def row_params(row: dict[str, Any]) -> list[Param]:
    """Every param of a metadata row: promoted columns turned back into params, then the
    ``parameters`` list."""
    params: list[Param] = []
    for name, value in row.items():
        if value is None or name in STRUCTURAL or isinstance(value, (dict, list)):
            continue
        parsed = parse_inflected(name)
        if parsed is None:
            continue
        accession, unit = parsed
        term = TERM_COLUMNS.get(accession)
        if term is not None:
            param = term.to_param(value)
            if param is not None:
                params.append(param)
            continue
        params.append(Param(cv.term_name(accession) or name, accession, value, unit))
    params.extend(params_from_rows(row.get("parameters")))
    return params
