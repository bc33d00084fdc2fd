"""The signals of a partition's items prepared together: the data columns of items that share
them are concatenated, and zero-run stripping, null marking (profile items) and the order check
run once over the concatenation (:mod:`~mzpeak_dask.transforms.runs`), giving every item the
signal :func:`~mzpeak_dask.encode.partition.prepare_signal` gives it alone, bit for bit."""

from __future__ import annotations

import numpy as np

from ..layouts.schema import PreparedSignal, SignalSchema
from ..model.records import SignalArray
from ..options import ConvertOptions
from ..transforms.delta_models import concatenated_weights, fit_concatenated
from ..transforms.null_masks import verified_null_masks
from ..transforms.runs import owners, run_any, split_runs
from ..transforms.sorting import runs_sorted
from ..transforms.zero_runs import zero_run_keep_masks

__all__ = ["prepared_together", "strip_and_mark"]


def prepared_together(
    schema: SignalSchema,
    items: list[tuple[int, list[SignalArray], bool]],
    routed: list[tuple[dict[str, np.ndarray], list[SignalArray], int]],
    fitted: list[bool],
    options: ConvertOptions,
) -> list[PreparedSignal]:
    """The signal of every item (its routed columns; ``fitted``: whether it is a profile item
    with a spacing model's inputs): items with the same data columns are concatenated once,
    and their spacing models fitted (:func:`~mzpeak_dask.transforms.delta_models.fit_concatenated`),
    stripped, marked and checked together (fitted items), or only checked together (the
    rest)."""
    columns = [c for c, _, _ in routed]
    lengths = [n for _, _, n in routed]
    models: list[list[float] | None] = [None] * len(items)
    valid: list[np.ndarray | None] = [None] * len(items)
    ordered = [True] * len(items)
    groups: dict[tuple[bool, tuple[str, ...]], list[int]] = {}
    for k, found in enumerate(columns):
        if schema.main.name in found:
            groups.setdefault((fitted[k], tuple(found)), []).append(k)
    for (profile_inputs, names), members in groups.items():
        concatenated = {name: np.concatenate([columns[k][name] for k in members]) for name in names}
        sizes = np.array([lengths[k] for k in members], dtype=np.int64)
        mask = None
        if profile_inputs:
            if options.null_marking:
                found = _fitted(schema, concatenated, sizes)
                for j, k in enumerate(members):
                    models[k] = found[j]
            concatenated, sizes, mask = strip_and_mark(
                schema, concatenated, sizes, [models[k] for k in members], options
            )
            pieces = {name: split_runs(values, sizes) for name, values in concatenated.items()}
            has_null = (
                run_any(mask, owners(sizes), len(members))
                if mask is not None
                else np.zeros(len(members), bool)
            )
            validity = split_runs(~mask, sizes) if mask is not None else None
            for j, k in enumerate(members):
                columns[k] = {name: pieces[name][j] for name in names}
                lengths[k] = int(sizes[j])
                valid[k] = validity[j] if has_null[j] else None
        main_valid = None if mask is None else ~mask
        in_order = runs_sorted(concatenated[schema.main.name], main_valid, sizes)
        for j, k in enumerate(members):
            ordered[k] = bool(in_order[j])
    return [
        PreparedSignal(index, columns[k], valid[k], lengths[k], profile, models[k], ordered[k])
        for k, (index, _, profile) in enumerate(items)
    ]


def _fitted(
    schema: SignalSchema, columns: dict[str, np.ndarray], lengths: np.ndarray
) -> list[list[float]]:
    """The spacing models of concatenated profile items, from their main axis and
    intensities before stripping."""
    mz = columns[schema.main.name].astype(np.float64, copy=False)
    weights = concatenated_weights(columns[schema.intensity.name])
    return fit_concatenated(mz, weights, lengths)


def strip_and_mark(
    schema: SignalSchema,
    columns: dict[str, np.ndarray],
    lengths: np.ndarray,
    models: list[list[float] | None],
    options: ConvertOptions,
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray | None]:
    """Zero-run stripping and null marking of concatenated profile items: the stripped
    columns, their lengths, and the null mask (None without null marking)."""
    intensity_name = schema.intensity.name
    if options.strip_zero_runs:
        keep = zero_run_keep_masks(columns[intensity_name], lengths)
        if not keep.all():
            columns = {name: values[keep] for name, values in columns.items()}
            lengths = np.bincount(owners(lengths)[keep], minlength=len(lengths))
    mask = None
    if options.null_marking:
        mask = verified_null_masks(
            columns[schema.main.name],
            columns[intensity_name],
            lengths,
            models,
            options.null_marking_ppm,
        )
    return columns, lengths, mask
