"""A point column built for many items at once (values end to end, one validity mask written
where points are null) is the array built item by item: each item's values or zeros, and a
mask of its own per item (all valid, its null marks, or all null where it lacks the column)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from mzpeak_dask.layouts import point
from mzpeak_dask.layouts.schema import PreparedSignal, SignalColumn


def _item_by_item(column: SignalColumn, items: list[PreparedSignal]) -> pa.Array:
    dtype = np.dtype(column.dtype)
    parts, masks = [], []
    for item in items:
        values = item.values.get(column.name)
        if values is None:
            parts.append(np.zeros(item.length, dtype))
            masks.append(np.zeros(item.length, bool))
        else:
            parts.append(values)
            marked = column.null_marked and item.valid is not None
            masks.append(item.valid if marked else np.ones(item.length, bool))
    values = np.concatenate(parts) if parts else np.zeros(0, dtype)
    mask = np.concatenate(masks) if masks else np.zeros(0, bool)
    return pa.array(values, pa.from_numpy_dtype(dtype), mask=~mask)


_ITEMS = st.lists(
    st.tuples(st.integers(0, 6), st.sampled_from(["values", "marked", "missing"]), st.integers()),
    max_size=8,
)


@given(_ITEMS, st.booleans())
def test_a_point_column_is_the_items_column_end_to_end(specs, null_marked: bool) -> None:
    column = SignalColumn(
        "MS:1000515", "intensity array", None, "<f4", "intensity", null_marked=null_marked
    )
    items = []
    for index, (length, kind, seed) in enumerate(specs):
        rng = np.random.default_rng(abs(seed))
        values = {} if kind == "missing" else {"intensity": rng.random(length).astype("<f4")}
        valid = rng.random(length) < 0.5 if kind == "marked" else None
        items.append(PreparedSignal(index, values, valid, length))
    total = sum(length for length, _, _ in specs)
    built = point._column_array(column, items, total)
    expected = _item_by_item(column, items)
    assert built.null_count == expected.null_count
    assert built.equals(expected)
