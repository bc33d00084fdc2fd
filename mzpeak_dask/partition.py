"""Planning a run before any worker starts: detect and stage the input, survey it, fix the data
columns from a deterministic sample, and cut the work into partitions.

Partitions are cut by input bytes (when the format has byte offsets) or by item count, never by
anything that depends on the cluster. Workers write each partition's rows as row groups of
their own (a row group never spans two partitions), so the partitioning fixes the archive's
row-group cuts, and the number of workers changes nothing.
"""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import numpy as np

from . import vocabulary as V
from .contracts import PEAKS, EncodeSpec, Partition, RunPlan
from .layouts.schema import SignalSchema
from .options import ConvertOptions
from .readers import (
    CHROMATOGRAMS,
    SPECTRA,
    InputFormat,
    ItemRange,
    Survey,
    decompress_to,
    detect_format,
)
from .readers.base import sample_positions
from .records import SignalArray
from .storage.inputs import ranges_ahead, remote_input, surveying
from .storage.urls import is_url
from .transforms.units import in_minutes


def item_range(survey: Survey, kind: str, start: int, stop: int) -> ItemRange:
    offsets = survey.offsets(kind)
    if offsets is None:
        return ItemRange(kind, start, stop)
    return ItemRange(kind, start, stop, int(offsets[start]), int(offsets[stop]))


def cut(survey: Survey, kind: str, options: ConvertOptions) -> list[ItemRange]:
    """Split one kind of item into ranges of at most ``partition_items`` items and about
    ``partition_bytes`` input bytes (not by bytes when the survey's hints say so: an input
    whose offsets only locate its items, cut as it is cut without them)."""
    n = survey.count(kind)
    offsets = survey.offsets(kind)
    ranges, start = [], 0
    while start < n:
        stop = min(n, start + options.partition_items)
        if offsets is not None and survey.hints.get("cut_by_bytes", True):
            limit = offsets[start] + options.partition_bytes
            by_bytes = int(np.searchsorted(offsets, limit, side="right")) - 1
            stop = max(start + 1, min(stop, by_bytes))
        ranges.append(item_range(survey, kind, start, stop))
        start = stop
    return ranges


def _sample(fmt: type[InputFormat], path: str, survey: Survey, kind: str) -> list:
    """Read the sampled items; consecutive positions are read as one range."""
    positions = sample_positions(survey.count(kind))
    runs: list[list[int]] = []
    for k in positions:
        if runs and runs[-1][-1] == k - 1:
            runs[-1].append(k)
        else:
            runs.append([k])
    ranges = [item_range(survey, kind, run[0], run[-1] + 1) for run in runs]
    records = []
    with _ahead(path, ranges):
        for items in ranges:
            records.extend(fmt.read(path, items, survey.hints))
    return records


def _ahead(path: str, ranges: list[ItemRange]):  # noqa: ANN202 - a context manager
    """For an object in storage, its sample ranges fetched side by side."""
    if not is_url(path) or any(r.byte_start is None for r in ranges):
        return nullcontext()
    return ranges_ahead(path, [(r.byte_start, r.byte_stop) for r in ranges])


def _schemas(
    fmt: type[InputFormat], path: str, survey: Survey, options: ConvertOptions
) -> dict[str, SignalSchema]:
    spectra = _sample(fmt, path, survey, SPECTRA)
    by_entity: dict[str, list[list[SignalArray]]] = {V.SPECTRUM: [], V.WAVELENGTH_SPECTRUM: []}
    for r in spectra:
        by_entity[r.entity].append(in_minutes(r.arrays))
    chromatograms = [in_minutes(r.arrays) for r in _sample(fmt, path, survey, CHROMATOGRAMS)]
    spectrum = SignalSchema.from_sample(
        V.SPECTRUM, by_entity[V.SPECTRUM], null_marking=options.null_marking
    )
    return {
        V.SPECTRUM: spectrum,
        PEAKS: spectrum.for_peaks(source_centroids=options.centroids_in_peaks),
        V.WAVELENGTH_SPECTRUM: SignalSchema.from_sample(
            V.WAVELENGTH_SPECTRUM, by_entity[V.WAVELENGTH_SPECTRUM]
        ),
        V.CHROMATOGRAM: SignalSchema.from_sample(V.CHROMATOGRAM, chromatograms),
    }


def plan_run(source: Path, staging_dir: Path, options: ConvertOptions) -> RunPlan:
    """Everything the coordinator decides before the workers start."""
    url = remote_input(source)  # an object read where it lies, by ranges
    with surveying(url):  # one cache for its reads: the survey's bytes serve the sample
        return _plan(source, url, staging_dir, options)


def _plan(source: Path, url: str | None, staging_dir: Path, options: ConvertOptions) -> RunPlan:
    fmt = detect_format(url or str(source))
    readable = url or decompress_to(str(source), str(staging_dir))
    survey = fmt.survey(readable)
    survey.hints["parser"] = options.parser
    run = survey.run_metadata
    spec = EncodeSpec(
        options,
        _schemas(fmt, readable, survey, options),
        dict(run.instrument_ids),
        run.run.get("default_data_processing_id"),
    )
    partitions = []
    for kind in (SPECTRA, CHROMATOGRAMS):
        for items in cut(survey, kind, options):
            partitions.append(Partition(len(partitions), readable, fmt.name, items, survey.hints))
    return RunPlan(source, readable, fmt, survey, spec, partitions)
