"""Planning a run (the plan task, on a worker or in this process): detect and stage the input,
survey it, fix the data columns from a deterministic sample, and cut the work into partitions.

Partitions are balanced by input bytes and item counts (by counts alone when the format has no
byte offsets), their number rounded up to a multiple of 2, 4 or 8 (:func:`boundaries`), never
cut by anything that depends on the cluster. Workers write each partition's rows as row groups
of their own (a row group never spans two partitions), so the partitioning fixes the archive's
row-group cuts, and the number of workers changes nothing.
"""

from __future__ import annotations

import itertools
from contextlib import nullcontext
from pathlib import Path

import numpy as np

from ..format import vocabulary as V
from ..layouts.schema import SignalSchema
from ..model.records import SignalArray
from ..options import ConvertOptions
from ..readers import (
    CHROMATOGRAMS,
    SPECTRA,
    InputFormat,
    ItemRange,
    Survey,
    decompress_to,
    detect_format,
)
from ..readers.base import sample_positions
from ..readers.thermo import CENTROID_HINT
from ..storage.inputs import ranges_ahead, remote_input, sample_spans, surveying
from ..storage.urls import is_url
from ..transforms.units import in_minutes
from .contracts import PEAKS, EncodeSpec, Partition, RunPlan

EVEN_UP_TO = 8  # a run's partition count is rounded up to a multiple of 2, 4 or 8


def item_range(survey: Survey, kind: str, start: int, stop: int) -> ItemRange:
    offsets = survey.offsets(kind)
    if offsets is None:
        return ItemRange(kind, start, stop)
    return ItemRange(kind, start, stop, int(offsets[start]), int(offsets[stop]))


def cut(survey: Survey, kind: str, options: ConvertOptions) -> list[ItemRange]:
    """Split one kind of item into balanced ranges (:func:`boundaries`; by item count alone
    when the survey's hints say so: an input whose offsets only locate its items, cut as it
    is cut without them)."""
    offsets = survey.offsets(kind)
    if not survey.hints.get("cut_by_bytes", True):
        offsets = None
    stops = boundaries(survey.count(kind), offsets, options)
    return [item_range(survey, kind, int(a), int(b)) for a, b in itertools.pairwise(stops)]


def boundaries(n: int, offsets: np.ndarray | None, options: ConvertOptions) -> np.ndarray:
    """Where the partitions of ``n`` items start, then ``n`` (``offsets``: the items' start
    offsets and their end, to balance by bytes too, or None to balance by count).

    Each item weighs its share of ``partition_bytes`` or of ``partition_items``, whichever is
    more, so that a partition of weight 1 is full by one limit or the other. A run gets the
    fewest partitions its weight allows, that count rounded up to a multiple of 2, 4 or 8 (the
    largest power of two not above a quarter of it, at least 2, at most :data:`EVEN_UP_TO`: a
    quarter more partitions at most), and partitions of equal weight. 13 partitions' worth
    becomes 14 equal ones, 27 becomes 28, 50 becomes 56: 2 workers, then 4, then 8, each get
    the same share of a run, and none is left with a last partition of its own. The cuts
    depend on the run alone, never on the cluster."""
    if n < 1:
        return np.zeros(1, dtype=np.int64)
    if offsets is None:
        count = _rounded(-(-int(n) // options.partition_items), n)
        stops = np.arange(count + 1, dtype=np.int64) * n // count
    else:
        sizes = np.diff(offsets[: n + 1]) / options.partition_bytes
        weight = np.maximum(sizes, 1 / options.partition_items)
        worth = np.concatenate(([0.0], np.cumsum(weight)))
        count = _rounded(max(1, int(np.ceil(worth[-1] - 1e-9))), n)
        targets = worth[-1] * np.arange(1, count) / count
        stops = np.concatenate(([0], _increasing(_nearest(worth, targets), n), [n]))
    return _at_most(stops.astype(np.int64), options.partition_items)


def _rounded(count: int, n: int) -> int:
    """``count`` partitions rounded up to a multiple of 2, 4 or 8 (see :func:`boundaries`),
    at most one an item."""
    unit = 1 if count == 1 else min(EVEN_UP_TO, 1 << (max(2, count // 4).bit_length() - 1))
    return min(n, -(-count // unit) * unit)


def _nearest(starts: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """The item whose start (increasing; last, the items' end) is nearest each target."""
    right = np.searchsorted(starts, targets)
    left = np.maximum(right - 1, 0)
    closer = targets - starts[left] <= starts[right] - targets
    return np.where(closer, left, right).astype(np.int64)


def _increasing(cuts: np.ndarray, n: int) -> np.ndarray:
    """``cuts`` (non-decreasing, in ``[0, n]``) moved the least so that every partition holds
    an item: items larger than a share would otherwise give two targets the same cut."""
    at = np.arange(1, len(cuts) + 1, dtype=np.int64)  # cut i leaves i items before it
    cuts = np.maximum.accumulate(np.maximum(cuts - at, 0)) + at
    return np.minimum(cuts, n - len(cuts) - 1 + at)


def _at_most(stops: np.ndarray, items: int) -> np.ndarray:
    """``stops`` with every partition of more than ``items`` items split into equal parts
    (a cut that rounding put one item past the limit)."""
    sizes = np.diff(stops)
    if sizes.max() <= items:
        return stops
    pieces = [stops[:1]]
    for start, size in zip(stops[:-1], sizes, strict=True):
        parts = -(-int(size) // items)
        pieces.append(start + np.arange(1, parts + 1, dtype=np.int64) * int(size) // parts)
    return np.concatenate(pieces)


def _sample(fmt: type[InputFormat], path: str, name: str, survey: Survey, kind: str) -> list:
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
            records.extend(fmt.read(path, items, survey.hints, name))
    return records


def _ahead(path: str, ranges: list[ItemRange]):  # noqa: ANN202
    """For an object in storage, its sample ranges fetched side by side (a context
    manager)."""
    if not is_url(path) or not ranges or any(r.byte_start is None for r in ranges):
        return nullcontext()
    spans = [(r.byte_start, r.byte_stop) for r in ranges]
    return ranges_ahead(path, sample_spans(spans))


def _schemas(
    fmt: type[InputFormat], path: str, name: str, survey: Survey, options: ConvertOptions
) -> tuple[dict[str, SignalSchema], frozenset[str]]:
    """The data columns of each entity, from the sampled items, and the entities sampled."""
    spectra = _sample(fmt, path, name, survey, SPECTRA)
    by_entity: dict[str, list[list[SignalArray]]] = {V.SPECTRUM: [], V.WAVELENGTH_SPECTRUM: []}
    for r in spectra:
        by_entity[r.entity].append(in_minutes(r.arrays))
    chromatograms = [in_minutes(r.arrays) for r in _sample(fmt, path, name, survey, CHROMATOGRAMS)]
    sampled = {entity for entity, items in by_entity.items() if items}
    if chromatograms:
        sampled.add(V.CHROMATOGRAM)
    spectrum = SignalSchema.from_sample(
        V.SPECTRUM, by_entity[V.SPECTRUM], null_marking=options.null_marking
    )
    schemas = {
        V.SPECTRUM: spectrum,
        PEAKS: spectrum.for_peaks(source_centroids=options.centroids_in_peaks),
        V.WAVELENGTH_SPECTRUM: SignalSchema.from_sample(
            V.WAVELENGTH_SPECTRUM, by_entity[V.WAVELENGTH_SPECTRUM]
        ),
        V.CHROMATOGRAM: SignalSchema.from_sample(V.CHROMATOGRAM, chromatograms),
    }
    return schemas, frozenset(sampled)


def plan_run(
    source: Path, staging_dir: Path, options: ConvertOptions, name: str | None = None
) -> RunPlan:
    """Everything decided before the partitions are written (the plan task). ``name``: what
    errors call the input, the path or URL the user gave (default: ``source``); the plan's
    partitions carry it to the workers."""
    url = remote_input(source)  # an object read where it lies, by ranges
    with surveying(url):  # one cache for its reads: the survey's bytes serve the sample
        return _plan(source, url, staging_dir, options, name or url or str(source))


def _plan(
    source: Path, url: str | None, staging_dir: Path, options: ConvertOptions, name: str
) -> RunPlan:
    fmt = detect_format(url or str(source), name)
    readable = url or decompress_to(str(source), str(staging_dir), name)
    survey = fmt.survey(readable, name)
    survey.hints["parser"] = options.parser
    survey.hints[CENTROID_HINT] = options.thermo_centroid
    run = survey.run_metadata
    schemas, sampled = _schemas(fmt, readable, name, survey, options)
    spec = EncodeSpec(
        options, schemas, dict(run.instrument_ids), run.run.get("default_data_processing_id")
    )
    partitions = []
    for kind in (SPECTRA, CHROMATOGRAMS):
        for items in cut(survey, kind, options):
            partitions.append(
                Partition(len(partitions), readable, fmt.name, items, survey.hints, name)
            )
    return RunPlan(source, readable, fmt, survey, spec, partitions, sampled, name)
