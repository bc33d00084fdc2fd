"""Routing an item's arrays to data columns (``encode.route_arrays``) gives what the plain
rule gives: the first array of a column's kind, as long as the main axis and held exactly in
the column's dtype, fills the column; every other array is auxiliary, in order; without a
main-axis array everything is auxiliary. Checked on arbitrary arrays: missing or repeated
kinds, other lengths, other dtypes (exact and inexact casts), lists, non-standard arrays."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from mzpeak_dask.encode.partition import Routes, _castable, route_arrays
from mzpeak_dask.format import vocabulary as V
from mzpeak_dask.layouts.schema import SignalSchema, array_key
from mzpeak_dask.model.records import SignalArray

KINDS = [
    (V.MZ_ARRAY, "m/z array", V.UNIT_MZ),
    (V.INTENSITY_ARRAY, "intensity array", V.UNIT_DETECTOR_COUNTS),
    (V.NON_STANDARD_ARRAY, "charge", None),
    (V.NON_STANDARD_ARRAY, "mean charge", None),
    (V.INTENSITY_ARRAY, "intensity array", None),  # another unit: no column of its own
]
DTYPES = [np.float64, np.float32, np.int32, np.int64]


def _plain(schema: SignalSchema, arrays: list[SignalArray]):
    """The rule, written plainly."""
    by_key: dict = {}
    for c in schema.columns:
        by_key.setdefault(c.key, c)
    found = [(a, by_key.get(array_key(a.array_type, a.name, a.unit))) for a in arrays]
    main = next((a for a, column in found if column is schema.main), None)
    n = len(main.values) if main is not None else 0
    columns: dict = {}
    auxiliary = []
    for a, column in found:
        values = None
        if main is not None and column is not None and column.name not in columns:
            if len(a.values) == n:
                values = _castable(np.asarray(a.values), np.dtype(column.dtype))
        if values is None:
            auxiliary.append(a)
        else:
            columns[column.name] = values
    return columns, auxiliary, n


array = st.tuples(
    st.sampled_from(range(len(KINDS))),
    st.sampled_from(DTYPES),
    st.integers(0, 4),
    st.sampled_from(["array", "list", "fraction", "huge"]),
)


def _array(kind: int, dtype, n: int, form: str, listed: bool = True) -> SignalArray:
    values = np.arange(n, dtype=dtype) + 1
    if form == "fraction" and values.dtype.kind == "f":
        values = values + 0.5
    if form == "huge" and values.dtype.kind == "f" and n:
        values[0] = 1e300 if values.dtype == np.float64 else 3e38
    array_type, name, unit = KINDS[kind]
    listed = listed and form == "list"
    return SignalArray(array_type, name, unit, values.tolist() if listed else values)


@given(st.lists(array, max_size=6), st.lists(array, min_size=1, max_size=6))
def test_routing_is_the_plain_rule(sample, arrays) -> None:
    schema = SignalSchema.from_sample(V.SPECTRUM, [[_array(*a, listed=False) for a in sample]])
    items = [_array(*a) for a in arrays]
    columns, auxiliary, n = route_arrays(schema, items, Routes.of(schema))
    expected_columns, expected_auxiliary, expected_n = _plain(schema, items)
    assert n == expected_n
    assert [id(a) for a in auxiliary] == [id(a) for a in expected_auxiliary]
    assert columns.keys() == expected_columns.keys()
    for name, values in columns.items():
        assert values.dtype == expected_columns[name].dtype
        assert values.tobytes() == expected_columns[name].tobytes()


def test_values_a_column_cannot_hold_go_auxiliary_without_a_warning() -> None:
    """An intensity array beyond float32's range, for a float32 column: auxiliary, and the
    cast that finds out warns nobody (a conversion's output stays its one-line messages)."""
    mz = SignalArray(V.MZ_ARRAY, "m/z array", V.UNIT_MZ, np.array([100.0, 101.0]))
    stored = SignalArray(
        V.INTENSITY_ARRAY, "intensity array", V.UNIT_DETECTOR_COUNTS, np.ones(2, np.float32)
    )
    schema = SignalSchema.from_sample(V.SPECTRUM, [[mz, stored]])
    huge = SignalArray(
        V.INTENSITY_ARRAY, "intensity array", V.UNIT_DETECTOR_COUNTS, np.array([1.0, 1e300])
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        columns, auxiliary, n = route_arrays(schema, [mz, huge], Routes.of(schema))
    assert (list(columns), auxiliary, n) == (["mz"], [huge], 2)
