"""The packed spectrum metadata tables: ``spectrum``, ``scan``, ``precursor``, ``selected_ion``.

Column names and order follow the reference writer (format doc section 2.4); see
:mod:`mzpeak_dask.tables.columns` for the promotion rules and why floats are float64.
The same ``precursor`` and ``selected_ion`` tables serve chromatograms (SRM).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..format import vocabulary as V
from ..model.records import Param, PrecursorRecord, ScanRecord, SpectrumRecord
from ..support.arrow_build import from_list
from .auxiliary import AUXILIARY_LIST_TYPE, auxiliary_column
from .builder import StructBuilder
from .columns import TermColumn, ValueColumn, fields, promote
from .params import PARAM_LIST_TYPE, ParamLists, param_rows

# -- spectrum -------------------------------------------------------------------------------------
MS_LEVEL = ValueColumn(V.MS_LEVEL, "ms level", None, pa.uint8(), "int")
POLARITY = TermColumn("MS_1000465_scan_polarity", pa.int8(), V.SCAN_POLARITIES, V.POLARITY_CODES)
REPRESENTATION = TermColumn("MS_1000525_spectrum_representation", pa.string(), V.REPRESENTATIONS)
SPECTRUM_TYPE = TermColumn("MS_1000559_spectrum_type", pa.string(), V.SPECTRUM_TYPES)
NUMBER_OF_DATA_POINTS = "MS_1003060_number_of_data_points"
NUMBER_OF_PEAKS = "MS_1003059_number_of_peaks"  # as newer reference builds write it
SPECTRUM_VALUES = [
    ValueColumn(V.LOWEST_OBSERVED_MZ, "lowest observed m/z", V.UNIT_MZ, pa.float64(), "float"),
    ValueColumn(V.HIGHEST_OBSERVED_MZ, "highest observed m/z", V.UNIT_MZ, pa.float64(), "float"),
    ValueColumn(V.BASE_PEAK_MZ, "base peak m/z", V.UNIT_MZ, pa.float64(), "float"),
    ValueColumn(
        V.BASE_PEAK_INTENSITY, "base peak intensity", V.UNIT_DETECTOR_COUNTS, pa.float64(), "float"
    ),
    ValueColumn(
        V.TOTAL_ION_CURRENT, "total ion current", V.UNIT_DETECTOR_COUNTS, pa.float64(), "float"
    ),
]
SPECTRUM_TERMS = (POLARITY, REPRESENTATION, SPECTRUM_TYPE)
_SPECTRUM_PROMOTED = {c.accession: c for c in [MS_LEVEL, *SPECTRUM_VALUES]}

SPECTRUM_TYPE_STRUCT = pa.struct(
    [
        pa.field("index", pa.uint64()),
        pa.field("id", pa.large_string()),
        pa.field(MS_LEVEL.column, MS_LEVEL.type),
        pa.field("time", pa.float64()),
        pa.field(POLARITY.column, POLARITY.type),
        pa.field(REPRESENTATION.column, REPRESENTATION.type),
        pa.field(SPECTRUM_TYPE.column, SPECTRUM_TYPE.type),
        *fields(SPECTRUM_VALUES[:2]),
        pa.field(NUMBER_OF_DATA_POINTS, pa.uint64()),
        pa.field(NUMBER_OF_PEAKS, pa.uint64()),
        *fields(SPECTRUM_VALUES[2:]),
        pa.field("data_processing_ref", pa.large_string()),
        pa.field("parameters", PARAM_LIST_TYPE),
        pa.field("auxiliary_arrays", AUXILIARY_LIST_TYPE),
        pa.field("number_of_auxiliary_arrays", pa.uint32()),
        pa.field("mz_delta_model", pa.large_list(pa.field("item", pa.float64()))),
    ]
)

# -- scan -----------------------------------------------------------------------------------------
SCAN_START_TIME = ValueColumn(
    V.SCAN_START_TIME, "scan start time", V.UNIT_MINUTE, pa.float64(), "float"
)
SCAN_VALUES = [
    SCAN_START_TIME,
    ValueColumn(V.PRESET_SCAN_CONFIGURATION, "preset scan configuration", None, pa.uint32(), "int"),
    ValueColumn(V.FILTER_STRING, "filter string", None, pa.large_string(), "str"),
    ValueColumn(
        V.ION_INJECTION_TIME, "ion injection time", V.UNIT_MILLISECOND, pa.float64(), "float"
    ),
]
_SCAN_PROMOTED = {c.accession: c for c in SCAN_VALUES}
WINDOW_VALUES = [
    ValueColumn(
        V.SCAN_WINDOW_LOWER_LIMIT, "scan window lower limit", V.UNIT_MZ, pa.float64(), "float"
    ),
    ValueColumn(
        V.SCAN_WINDOW_UPPER_LIMIT, "scan window upper limit", V.UNIT_MZ, pa.float64(), "float"
    ),
]
_WINDOW_PROMOTED = {c.accession: c for c in WINDOW_VALUES}
SCAN_WINDOW_STRUCT = pa.struct([*fields(WINDOW_VALUES), pa.field("parameters", PARAM_LIST_TYPE)])
SCAN_TYPE_STRUCT = pa.struct(
    [
        pa.field("source_index", pa.uint64()),
        *fields(SCAN_VALUES),
        pa.field("ion_mobility_value", pa.float64()),
        pa.field("ion_mobility_type", pa.string()),
        pa.field("instrument_configuration_ref", pa.uint32()),
        pa.field("parameters", PARAM_LIST_TYPE),
        pa.field("scan_windows", pa.large_list(pa.field("item", SCAN_WINDOW_STRUCT))),
    ]
)

# -- precursor / selected ion ---------------------------------------------------------------------
ISOLATION_VALUES = [
    ValueColumn(
        V.ISOLATION_WINDOW_TARGET_MZ,
        "isolation window target m/z",
        V.UNIT_MZ,
        pa.float64(),
        "float",
        name="MS_1000827_isolation_window_target_mz",
    ),
    ValueColumn(
        V.ISOLATION_WINDOW_LOWER_OFFSET,
        "isolation window lower offset",
        V.UNIT_MZ,
        pa.float64(),
        "float",
        name="MS_1000828_isolation_window_lower_offset",
    ),
    ValueColumn(
        V.ISOLATION_WINDOW_UPPER_OFFSET,
        "isolation window upper offset",
        V.UNIT_MZ,
        pa.float64(),
        "float",
        name="MS_1000829_isolation_window_upper_offset",
    ),
]
ISOLATION_PROMOTED = {c.accession: c for c in ISOLATION_VALUES}
ISOLATION_WINDOW_STRUCT = pa.struct(
    [*fields(ISOLATION_VALUES), pa.field("parameters", PARAM_LIST_TYPE)]
)
PRECURSOR_TYPE_STRUCT = pa.struct(
    [
        pa.field("source_index", pa.uint64()),
        pa.field("precursor_index", pa.uint64()),
        pa.field("precursor_id", pa.large_string()),
        pa.field("isolation_window", ISOLATION_WINDOW_STRUCT),
        pa.field("activation", pa.struct([pa.field("parameters", PARAM_LIST_TYPE)])),
    ]
)
SELECTED_ION_VALUES = [
    ValueColumn(V.SELECTED_ION_MZ, "selected ion m/z", V.UNIT_MZ, pa.float64(), "float"),
    ValueColumn(V.CHARGE_STATE, "charge state", None, pa.int32(), "int"),
    ValueColumn(
        V.PEAK_INTENSITY,
        "intensity",
        V.UNIT_DETECTOR_COUNTS,
        pa.float64(),
        "float",
        name="MS_1000042_intensity_unit_MS_1000131",
    ),
]
_SELECTED_ION_PROMOTED = {c.accession: c for c in SELECTED_ION_VALUES}
SELECTED_ION_TYPE_STRUCT = pa.struct(
    [
        pa.field("source_index", pa.uint64()),
        pa.field("precursor_index", pa.uint64()),
        *fields(SELECTED_ION_VALUES),
        pa.field("ion_mobility_value", pa.float64()),
        pa.field("ion_mobility_type", pa.string()),
        pa.field("parameters", PARAM_LIST_TYPE),
    ]
)


def split_ion_mobility(params: list[Param]) -> tuple[dict[str, Any], list[Param]]:
    """Promote the first ion-mobility attribute whose unit is the one its type implies."""
    for i, p in enumerate(params):
        unit = V.ION_MOBILITY_UNITS.get(p.accession or "")
        if unit is not None and p.unit in (None, unit) and isinstance(p.value, (int, float)):
            rest = params[:i] + params[i + 1 :]
            return {"ion_mobility_value": float(p.value), "ion_mobility_type": p.accession}, rest
    return {}, params


def own_data_processing(ref: str | None, default: str | None) -> str | None:
    """An item's ``data_processing_ref``: null unless it departs from the run's default (the
    specification's ``data_processing_id`` rule; the reference writer writes null as well)."""
    return None if ref == default else ref


def minutes(param: Param | None) -> float | None:
    """A time param's value in minutes (mzML allows seconds or minutes)."""
    if param is None or not isinstance(param.value, (int, float)):
        return None
    if param.unit == V.UNIT_SECOND:
        return float(param.value) / 60.0
    if param.unit in (V.UNIT_MINUTE, None):
        return float(param.value)
    if param.unit == V.UNIT_MILLISECOND:
        return float(param.value) / 60000.0
    return None


def _scan_params(scan: ScanRecord) -> list[Param]:
    """Scan start time in seconds is rewritten to minutes so it fits its column."""
    out = []
    for p in scan.params:
        if p.accession == V.SCAN_START_TIME and p.unit == V.UNIT_SECOND:
            p = Param(p.name, p.accession, minutes(p), V.UNIT_MINUTE)
        out.append(p)
    return out


@dataclass
class PrecursorTables:
    """Accumulates precursor and selected-ion rows (shared by spectra and chromatograms)."""

    precursor: StructBuilder = field(default_factory=lambda: StructBuilder(PRECURSOR_TYPE_STRUCT))
    selected_ion: StructBuilder = field(
        default_factory=lambda: StructBuilder(SELECTED_ION_TYPE_STRUCT)
    )
    # the spectrumRef of each selected ion's precursor, resolved to an index by the coordinator
    selected_ion_refs: list[str | None] = field(default_factory=list)
    _activation: ParamLists = field(default_factory=ParamLists)
    _ion_parameters: ParamLists = field(default_factory=ParamLists)

    def add(self, source_index: int, precursors: list[PrecursorRecord]) -> None:
        for prec in precursors:
            window, window_rest = promote(prec.isolation_window, ISOLATION_PROMOTED)
            window["parameters"] = param_rows(window_rest)
            self.precursor.append(
                {
                    "source_index": source_index,
                    "precursor_id": prec.spectrum_ref,
                    "isolation_window": window,
                }
            )
            self._activation.add(prec.activation)
            for ion in prec.selected_ions:
                mobility, ion_params = split_ion_mobility(ion.params)
                row, rest = promote(ion_params, _SELECTED_ION_PROMOTED)
                row.update(mobility, source_index=source_index)
                self.selected_ion.append(row)
                self._ion_parameters.add(rest)
                self.selected_ion_refs.append(prec.spectrum_ref)

    def finish(self) -> dict[str, pa.StructArray]:
        """The ``precursor`` and ``selected_ion`` tables."""
        activation = pa.StructArray.from_arrays(
            [self._activation.finish()], fields=list(PRECURSOR_TYPE_STRUCT["activation"].type)
        )
        return {
            "precursor": self.precursor.finish({"activation": activation}),
            "selected_ion": self.selected_ion.finish({"parameters": self._ion_parameters.finish()}),
        }


_SPECTRUM_GATHERED = (
    "index",
    "id",
    "time",
    "data_processing_ref",
    NUMBER_OF_DATA_POINTS,
    NUMBER_OF_PEAKS,
    "number_of_auxiliary_arrays",
    "mz_delta_model",
)
_SCAN_GATHERED = ("source_index", "instrument_configuration_ref", "scan_windows")


def _gathered(names: tuple[str, ...]) -> dict[str, list]:
    return {name: [] for name in names}


@dataclass
class SpectrumTables:
    """Accumulates the four packed tables for the spectra of one partition.

    The columns every row has (index, id, time, counts, the spacing model; a scan's source
    index, instrument and windows) are gathered straight into one list each; only the
    promoted params go through a row dict (:func:`~mzpeak_dask.tables.columns.promote`)."""

    instrument_ids: dict[str, int]
    default_data_processing: str | None = None  # the run's default_data_processing_id
    spectrum: StructBuilder = field(default_factory=lambda: StructBuilder(SPECTRUM_TYPE_STRUCT))
    scan: StructBuilder = field(default_factory=lambda: StructBuilder(SCAN_TYPE_STRUCT))
    precursors: PrecursorTables = field(default_factory=PrecursorTables)
    _auxiliary: list = field(default_factory=list)
    _parameters: ParamLists = field(default_factory=ParamLists)  # of the spectrum rows
    _scan_parameters: ParamLists = field(default_factory=ParamLists)
    _spectrum_columns: dict[str, list] = field(
        default_factory=lambda: _gathered(_SPECTRUM_GATHERED)
    )
    _scan_columns: dict[str, list] = field(default_factory=lambda: _gathered(_SCAN_GATHERED))

    def add(
        self,
        index: int,
        record: SpectrumRecord,
        *,
        number_of_data_points: int,
        number_of_peaks: int | None = None,
        auxiliary: list,
        mz_delta_model: list[float] | None,
    ) -> None:
        row, rest = promote(record.params, _SPECTRUM_PROMOTED, SPECTRUM_TERMS)
        first_scan_time = None
        for scan in record.scans:
            self._add_scan(index, scan)
            if first_scan_time is None:
                first_scan_time = minutes(_find(scan.params, V.SCAN_START_TIME))
        columns = self._spectrum_columns
        columns["index"].append(index)
        columns["id"].append(record.id)
        columns["time"].append(first_scan_time)
        columns["data_processing_ref"].append(
            own_data_processing(record.data_processing_ref, self.default_data_processing)
        )
        columns[NUMBER_OF_DATA_POINTS].append(number_of_data_points)
        columns[NUMBER_OF_PEAKS].append(number_of_peaks)
        columns["number_of_auxiliary_arrays"].append(len(auxiliary))
        columns["mz_delta_model"].append(mz_delta_model)
        self.spectrum.append(row)
        self._parameters.add(rest)
        self._auxiliary.append(auxiliary)
        if record.precursors:
            self.precursors.add(index, record.precursors)

    def _add_scan(self, index: int, scan: ScanRecord) -> None:
        mobility, params = split_ion_mobility(_scan_params(scan))
        row, rest = promote(params, _SCAN_PROMOTED)
        windows = []
        for w in scan.scan_windows:
            wrow, wrest = promote(w, _WINDOW_PROMOTED)
            wrow["parameters"] = param_rows(wrest)
            windows.append(wrow)
        if mobility:
            row.update(mobility)
        columns = self._scan_columns
        columns["source_index"].append(index)
        columns["instrument_configuration_ref"].append(
            self.instrument_ids.get(scan.instrument_configuration_ref or "")
        )
        columns["scan_windows"].append(windows)
        self.scan.append(row)
        self._scan_parameters.add(rest)

    @property
    def selected_ion_refs(self) -> list[str | None]:
        return self.precursors.selected_ion_refs

    def finish(self) -> dict[str, pa.StructArray]:
        return {
            "spectrum": self.spectrum.finish(
                {
                    **_built(SPECTRUM_TYPE_STRUCT, self._spectrum_columns),
                    "parameters": self._parameters.finish(),
                    "auxiliary_arrays": auxiliary_column(self._auxiliary),
                }
            ),
            "scan": self.scan.finish(
                {
                    **_built(SCAN_TYPE_STRUCT, self._scan_columns),
                    "parameters": self._scan_parameters.finish(),
                }
            ),
            **self.precursors.finish(),
        }


def _built(type: pa.StructType, columns: dict[str, list]) -> dict[str, pa.Array]:
    """The gathered columns of a struct type as Arrow arrays of their fields' types."""
    return {name: from_list(values, type.field(name).type) for name, values in columns.items()}


def _find(params: list[Param], accession: str) -> Param | None:
    return next((p for p in params if p.accession == accession), None)
