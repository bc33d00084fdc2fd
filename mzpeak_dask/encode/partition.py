"""The worker side of a conversion: one partition of a run -> Arrow tables.

:func:`encode_partition` reads its item range itself (it receives only plain data), routes each
spectrum to its entity (MS spectra, or UV/DAD wavelength spectra), prepares the signal
(zero-run stripping, null marking, the spacing model; profile spectra only), and lays it out
(point or chunked). Indices in the returned tables are *local* to the partition; the coordinator
rebases them. No Dask and no file output here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from ..errors import InputError, NumpressEncodeError
from ..format import vocabulary as V
from ..layouts import layout_of, point
from ..layouts.schema import PreparedSignal, SignalColumn, SignalSchema, array_key
from ..model.records import ChromatogramRecord, SignalArray, SpectrumRecord
from ..options import ConvertOptions
from ..readers import CHROMATOGRAMS, FORMATS
from ..support.heap import collection_paused, keep_freed_blocks
from ..tables.chromatogram_metadata import ChromatogramTables
from ..tables.spectrum_metadata import SpectrumTables
from ..transforms.null_marking import fit_delta_model, verified_null_mask
from ..transforms.peak_picking import pick_peaks
from ..transforms.sorting import is_sorted, sort_order
from ..transforms.units import in_minutes
from ..transforms.zero_runs import zero_run_keep_mask
from .contracts import PEAKS, EncodedPartition, EncodeSpec, Partition
from .prepared import prepared_together


def _castable(values: np.ndarray, dtype: np.dtype) -> np.ndarray | None:
    """``values`` in ``dtype`` if that holds them exactly, else None."""
    if values.dtype == dtype:
        return values
    if values.dtype.kind == dtype.kind and values.dtype.itemsize <= dtype.itemsize:
        return values.astype(dtype)
    with np.errstate(invalid="ignore", over="ignore"):  # a value out of range: not held
        cast = values.astype(dtype)
        back = cast.astype(values.dtype)
    same = np.array_equal(back, values, equal_nan=values.dtype.kind == "f")
    return cast if same else None


@dataclass(frozen=True, slots=True)
class Routes:
    """What routing an item's arrays looks up in a schema, worked out once for many items: the
    column of each array key (the first column with that key, as ``column_for`` finds it), each
    column's dtype, the main and intensity columns."""

    by_key: dict[tuple[str, str, str | None], SignalColumn]
    dtypes: dict[str, np.dtype]
    main: SignalColumn
    intensity: str | None

    @classmethod
    def of(cls, schema: SignalSchema) -> Routes:
        by_key: dict[tuple[str, str, str | None], SignalColumn] = {}
        for c in schema.columns:
            by_key.setdefault(c.key, c)
        intensity = schema.intensity
        return cls(
            by_key,
            {c.name: np.dtype(c.dtype) for c in schema.columns},
            schema.main,
            intensity.name if intensity is not None else None,
        )


def route_arrays(
    schema: SignalSchema, arrays: list[SignalArray], routes: Routes | None = None
) -> tuple[dict[str, np.ndarray], list[SignalArray], int]:
    """Assign arrays to data columns; the rest become auxiliary. Returns (columns, aux, n)."""
    routes = routes or Routes.of(schema)
    by_key, dtypes = routes.by_key, routes.dtypes
    found = []  # each array with its column
    main = None
    for a in arrays:
        column = by_key.get(array_key(a.array_type, a.name, a.unit))
        found.append((a, column))
        if main is None and column is routes.main:
            main = a
    if main is None:
        return {}, list(arrays), 0
    n = len(main.values)
    columns: dict[str, np.ndarray] = {}
    auxiliary: list[SignalArray] = []
    for a, column in found:
        values = None
        if column is not None and column.name not in columns and len(a.values) == n:
            values, dtype = a.values, dtypes[column.name]
            if type(values) is not np.ndarray or values.dtype != dtype:  # else as it is
                values = _castable(np.asarray(values), dtype)
        if values is None:
            auxiliary.append(a)
        else:
            columns[column.name] = values
    return columns, auxiliary, n


def _in_axis_order(
    schema: SignalSchema, columns: dict[str, np.ndarray], auxiliary: list[SignalArray], n: int
) -> tuple[dict[str, np.ndarray], list[SignalArray]]:
    """The item's points sorted along the main axis, every per-point array carried along (the
    auxiliary ones of the same length too)."""
    main = columns.get(schema.main.name)
    order = None if main is None else sort_order(main)
    if order is None:
        return columns, auxiliary
    columns = {k: v[order] for k, v in columns.items()}
    auxiliary = [
        replace(a, values=np.asarray(a.values)[order]) if len(a.values) == n else a
        for a in auxiliary
    ]
    return columns, auxiliary


def _routed(
    schema: SignalSchema,
    arrays: list[SignalArray],
    options: ConvertOptions,
    sort: bool | None,
    routes: Routes | None = None,
) -> tuple[dict[str, np.ndarray], list[SignalArray], int]:
    """Time arrays in minutes, routed to columns, in main-axis order (``sort``; by default in the
    chunked layout, which needs it, see :mod:`~mzpeak_dask.transforms.sorting`)."""
    columns, auxiliary, n = route_arrays(schema, in_minutes(arrays), routes)
    if layout_of(options).SORTS_ITEMS if sort is None else sort:
        columns, auxiliary = _in_axis_order(schema, columns, auxiliary, n)
    return columns, auxiliary, n


def _model_inputs(
    routes: Routes, columns: dict[str, np.ndarray], n: int, profile: bool
) -> tuple[np.ndarray, np.ndarray] | None:
    """The (main axis, intensity) a profile item's spacing model is fitted on, if it has both."""
    if not profile or n <= 0:
        return None
    intensity = columns.get(routes.intensity) if routes.intensity is not None else None
    main_values = columns.get(routes.main.name)
    if intensity is not None and main_values is not None:
        return main_values, intensity
    return None


def _signal(
    schema: SignalSchema,
    index: int,
    columns: dict[str, np.ndarray],
    n: int,
    *,
    profile: bool,
    options: ConvertOptions,
    model: list[float] | None,
    marked: bool,
) -> PreparedSignal:
    """Zero-run stripping and null marking (``marked``: a profile item with both axes, see
    :func:`_model_inputs`), per format doc 5.1-5.2, given the item's spacing model (fitted
    before stripping)."""
    valid = None
    if marked:
        intensity_name = schema.intensity.name
        if options.strip_zero_runs:
            keep = zero_run_keep_mask(columns[intensity_name])
            if not keep.all():
                columns = {k: v[keep] for k, v in columns.items()}
                n = int(keep.sum())
        if options.null_marking:
            marked = verified_null_mask(
                columns[schema.main.name],
                columns[intensity_name],
                np.asarray(model),
                options.null_marking_ppm,
            )
            valid = ~marked if marked.any() else None
    main_values = columns.get(schema.main.name)
    ordered = main_values is None or is_sorted(main_values, valid)
    return PreparedSignal(index, columns, valid, n, profile, model, ordered)


def prepare_signal(
    schema: SignalSchema,
    index: int,
    arrays: list[SignalArray],
    *,
    profile: bool,
    options: ConvertOptions,
    sort: bool | None = None,
) -> tuple[PreparedSignal, list[SignalArray]]:
    """One item's :func:`_routed` columns, spacing model and :func:`_signal`."""
    routes = Routes.of(schema)
    columns, auxiliary, n = _routed(schema, arrays, options, sort, routes)
    inputs = _model_inputs(routes, columns, n, profile)
    model = None
    if inputs is not None and options.null_marking:
        model = fit_delta_model(*inputs).tolist()
    signal = _signal(
        schema,
        index,
        columns,
        n,
        profile=profile,
        options=options,
        model=model,
        marked=inputs is not None,
    )
    return signal, auxiliary


def prepare_signals(
    schema: SignalSchema,
    items: list[tuple[int, list[SignalArray], bool]],
    options: ConvertOptions,
) -> list[tuple[PreparedSignal, list[SignalArray]]]:
    """:func:`prepare_signal` of many items ``(index, arrays, profile)``, bit for bit, with the
    work done once over the arrays concatenated once: the spacing models, zero-run stripping,
    null marking and the order check (:func:`~mzpeak_dask.encode.prepared.prepared_together`)."""
    routes = Routes.of(schema)
    routed = [_routed(schema, arrays, options, None, routes) for _, arrays, _ in items]
    fitted = [
        _model_inputs(routes, columns, n, profile) is not None
        for (_, _, profile), (columns, _, n) in zip(items, routed, strict=True)
    ]
    signals = prepared_together(schema, items, routed, fitted, options)
    return [(signal, auxiliary) for signal, (_, auxiliary, _) in zip(signals, routed, strict=True)]


def _peak_list(schema: SignalSchema, index: int, arrays: list[SignalArray]) -> PreparedSignal:
    """The centroided peak list of a profile spectrum (for ``--peaks``)."""
    mz = next((a.values for a in arrays if a.array_type == V.MZ_ARRAY), None)
    intensity = next((a.values for a in arrays if a.array_type == V.INTENSITY_ARRAY), None)
    if mz is None or intensity is None or len(mz) != len(intensity):
        return PreparedSignal(index, {}, None, 0)
    peak_mz, peak_intensity = pick_peaks(mz, intensity)
    intensity_dtype = np.dtype(schema.intensity.dtype)
    columns = {
        schema.main.name: peak_mz,
        schema.intensity.name: peak_intensity.astype(intensity_dtype),
    }
    return PreparedSignal(index, columns, None, len(peak_mz), ordered=is_sorted(peak_mz))


def _encode_spectra(records: list[SpectrumRecord], spec: EncodeSpec, out: EncodedPartition) -> None:
    by_entity: dict[str, list[SpectrumRecord]] = {}
    for r in records:
        by_entity.setdefault(r.entity, []).append(r)
    options = spec.options
    for entity, group in by_entity.items():
        schema = spec.schemas[entity]
        tables = SpectrumTables(spec.instrument_ids, spec.default_data_processing)
        prepared, peaks = [], []
        centroid_peaks = entity == V.SPECTRUM and options.centroids_in_peaks
        profiles = [r.is_profile and entity == V.SPECTRUM for r in group]
        signals = iter(
            prepare_signals(
                schema,
                [
                    (local, record.arrays, profile)
                    for local, (record, profile) in enumerate(zip(group, profiles, strict=True))
                    if not (centroid_peaks and record.is_centroid)
                ],
                options,
            )
        )
        for local, (record, profile) in enumerate(zip(group, profiles, strict=True)):
            peak = None
            if centroid_peaks and record.is_centroid:
                peak, auxiliary = prepare_signal(
                    spec.schemas[PEAKS],
                    local,
                    record.arrays,
                    profile=False,
                    options=options,
                    sort=False,  # spectra_peaks is always in the point layout
                )
                signal = PreparedSignal(local, {}, None, 0)
                out.centroid_points += peak.length
            else:
                signal, auxiliary = next(signals)
                if profile and options.peaks:
                    peak = _peak_list(spec.schemas[PEAKS], local, record.arrays)
            if peak is not None:
                peaks.append(peak)
            tables.add(
                local,
                record,
                number_of_data_points=signal.length,
                number_of_peaks=None if peak is None else peak.length,
                auxiliary=auxiliary,
                mz_delta_model=signal.model,
            )
            prepared.append(signal)
        _store(out, entity, schema, prepared, tables.finish(), tables.selected_ion_refs, spec)
        if peaks:
            out.peaks = point.encode(spec.schemas[PEAKS], peaks, options)  # always points
            out.peak_spectra = sum(1 for p in peaks if p.length)
            out.peak_points = sum(p.length for p in peaks)
            if not all(p.ordered for p in peaks):
                out.unsorted.add(PEAKS)


def _encode_chromatograms(
    records: list[ChromatogramRecord], spec: EncodeSpec, out: EncodedPartition
) -> None:
    schema = spec.schemas[V.CHROMATOGRAM]
    tables = ChromatogramTables(spec.default_data_processing)
    prepared = []
    for local, record in enumerate(records):
        signal, auxiliary = prepare_signal(
            schema, local, record.arrays, profile=False, options=spec.options
        )
        tables.add(local, record, number_of_data_points=signal.length, auxiliary=auxiliary)
        prepared.append(signal)
    _store(out, V.CHROMATOGRAM, schema, prepared, tables.finish(), tables.selected_ion_refs, spec)


def _store(
    out: EncodedPartition,
    entity: str,
    schema: SignalSchema,
    prepared: list[PreparedSignal],
    metadata: dict[str, pa.Array],
    refs: list,
    spec: EncodeSpec,
) -> None:
    out.counts[entity] = len(prepared)
    out.points[entity] = sum(p.length for p in prepared)
    out.data[entity] = layout_of(spec.options).encode(schema, prepared, spec.options)
    if not all(p.ordered for p in prepared):
        out.unsorted.add(entity)
    out.metadata[entity] = metadata
    out.selected_ion_refs[entity] = refs


def encode_partition(partition: Partition, spec: EncodeSpec) -> EncodedPartition:
    """Read and encode one partition (runs on a worker), the process's heap keeping the blocks
    the partition frees for the next, and Python's cyclic collector paused while its records
    live (:mod:`~mzpeak_dask.support.heap`)."""
    keep_freed_blocks()
    with collection_paused():  # bench_mgf, bench_mzxml: 8 to 33 % of the CPU (performance page)
        return _read_and_encode(partition, spec)


def _read_and_encode(partition: Partition, spec: EncodeSpec) -> EncodedPartition:
    fmt = FORMATS[partition.format]
    records = list(fmt.read(partition.path, partition.items, partition.hints, partition.named))
    out = EncodedPartition(partition.sequence, partition.items.kind)
    try:
        if partition.items.kind == CHROMATOGRAMS:
            _encode_chromatograms(records, spec, out)  # type: ignore[arg-type]
        else:
            _encode_spectra(records, spec, out)  # type: ignore[arg-type]
    except NumpressEncodeError as exc:  # lossy encodings the user asked for, on values they reject
        items = partition.items
        raise InputError(
            f"{partition.named}: {items.kind} {items.start}-{items.stop - 1} "
            f"(0-based): cannot encode with MS-Numpress ({exc})"
        ) from None
    return out
