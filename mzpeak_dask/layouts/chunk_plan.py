"""Where a partition's items are cut into chunks, and how their main axes are stored, worked
out for all items at once over their concatenated main axes (chunked layout, format doc
sections 5.3-5.4): each item's chunk offsets and bounds as
:func:`~mzpeak_dask.transforms.chunking.chunk_boundaries` and
:func:`~mzpeak_dask.transforms.chunking.chunk_bounds` give them item by item, and its chunks'
delta or basic encoding (:func:`~mzpeak_dask.codecs.delta.encode_chunks`). Items whose chunks
try MS-Numpress are encoded chunk by chunk by the layout."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..codecs import delta
from ..format import vocabulary as V
from ..options import ConvertOptions
from ..transforms.chunking import chunk_boundaries_of_runs, chunk_bounds
from .schema import PreparedSignal, SignalSchema

__all__ = ["ItemChunks", "item_valid", "plan_chunks"]


@dataclass(slots=True)
class ItemChunks:
    """One item's chunks: offsets into its points, first and last non-null value of each, and
    each chunk's (encoding CURIE, stored (values, valid)), or None when the layout encodes them."""

    offsets: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    axis: list[tuple[str, tuple[np.ndarray, np.ndarray]]] | None


def item_valid(item: PreparedSignal) -> np.ndarray:
    """The item's validity (all True when it has no nulls)."""
    return item.valid if item.valid is not None else np.ones(item.length, dtype=bool)


def plan_chunks(
    schema: SignalSchema,
    items: list[PreparedSignal],
    options: ConvertOptions,
    encodings: list[str],
) -> list[ItemChunks | None]:
    """Each item's chunks (None for an item without points); ``encodings[k]`` is the main-axis
    encoding item ``k`` tries."""
    chosen = [k for k, it in enumerate(items) if it.length and schema.main.name in it.values]
    out: list[ItemChunks | None] = [None] * len(items)
    if not chosen:
        return out
    mains = [items[k].values[schema.main.name].astype(np.float64, copy=False) for k in chosen]
    values = np.concatenate(mains)
    valid = np.concatenate([item_valid(items[k]) for k in chosen])
    lengths = np.array([len(m) for m in mains], dtype=np.int64)
    offsets = chunk_boundaries_of_runs(values, valid, lengths, options.chunk_width, min_points=2)
    starts = np.cumsum(lengths) - lengths
    everywhere = np.append(
        np.concatenate([o[:-1] + s for o, s in zip(offsets, starts, strict=True)]), len(values)
    )
    first, last = chunk_bounds(values, valid, everywhere)
    counts = [len(o) - 1 for o in offsets]
    tried = np.repeat([encodings[k] == V.DELTA_ENCODING for k in chosen], counts)
    is_delta, stored = delta.encode_chunks(values, valid, everywhere, tried)
    curies = np.where(is_delta, V.DELTA_ENCODING, V.NO_COMPRESSION).tolist()
    at = 0
    for k, item_offsets, n in zip(chosen, offsets, counts, strict=True):
        axis = None
        if encodings[k] != V.NUMPRESS_LINEAR:
            axis = list(zip(curies[at : at + n], stored[at : at + n], strict=True))
        out[k] = ItemChunks(item_offsets, first[at : at + n], last[at : at + n], axis)
        at += n
    return out
