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
from typing import Literal

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
from .storage.inputs import Lead, ranges_ahead, remote_input, sample_spans, surveying
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
    if not survey.hints.get("cut_by_bytes", True):
        offsets = None
    ranges, start = [], 0
    while start < n:
        stop = _stop(offsets, start, n, options)
        ranges.append(item_range(survey, kind, start, stop))
        start = stop
    return ranges


def _stop(offsets: np.ndarray | None, start: int, n: int, options: ConvertOptions) -> int:
    """The end of the partition that starts at item ``start`` (of ``n``; ``offsets``: their
    start offsets and end, to cut by bytes, or None)."""
    stop = min(n, start + options.partition_items)
    if offsets is not None:
        limit = offsets[start] + options.partition_bytes
        by_bytes = int(np.searchsorted(offsets, limit, side="right")) - 1
        stop = max(start + 1, min(stop, by_bytes))
    return stop


def first_read(options: ConvertOptions, whole: bool = False) -> Lead:
    """Where the first partition of spectra ends, for a plan that parses it right after
    (:func:`~mzpeak_dask.storage.inputs.surveying`); ``whole``: only when it holds every
    spectrum (a small run, converted where it is planned)."""

    def lead(kind: str, offsets: np.ndarray) -> int | None:
        n = len(offsets) - 1
        if kind != SPECTRA or n < 1:
            return None
        stop = _stop(offsets, 0, n, options)
        return None if whole and stop < n else int(offsets[stop])

    return lead


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
    with _ahead(path, ranges, kind, survey):
        for items in ranges:
            records.extend(fmt.read(path, items, survey.hints))
    return records


def _ahead(path: str, ranges: list[ItemRange], kind: str, survey: Survey):  # noqa: ANN202
    """For an object in storage, its sample ranges fetched side by side (a context
    manager; the first with the first partition when it is parsed next)."""
    if not is_url(path) or not ranges or any(r.byte_start is None for r in ranges):
        return nullcontext()
    spans = [(r.byte_start, r.byte_stop) for r in ranges]
    return ranges_ahead(path, sample_spans(path, kind, survey.offsets(kind), spans))


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


Reads = Literal["here", "here if small", "elsewhere"]  # where a run's first partition is parsed


def plan_run(
    source: Path, staging_dir: Path, options: ConvertOptions, reads: Reads = "elsewhere"
) -> RunPlan:
    """Everything the coordinator decides before the workers start. ``reads``: where the
    run's first partition is parsed, ``"here"`` (right after the plan, in this process),
    ``"here if small"`` (when the run is small enough to be converted where it is planned)
    or ``"elsewhere"``; for an object in storage parsed here, the plan fetches the first
    partition with the first spectra it samples, one request fewer."""
    url = remote_input(source)  # an object read where it lies, by ranges
    lead = None if reads == "elsewhere" else first_read(options, whole=reads != "here")
    with surveying(url, lead):  # one cache for its reads: the survey's bytes serve the sample
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
