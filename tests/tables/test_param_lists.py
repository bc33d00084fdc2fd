"""Parameter lists gathered column by column are the arrays row-by-row conversion builds, on
the params of real runs and on every kind of value (and the Parquet bytes written from them are
the same)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mzpeak_dask.model.records import Param
from mzpeak_dask.readers import SPECTRA, MzMLFormat
from mzpeak_dask.readers.base import ItemRange
from mzpeak_dask.tables.params import (
    PARAM_LIST_TYPE,
    ParamLists,
    _value_row,
    _value_slots,
    param_rows,
)

from ..conftest import DATA
from ..helpers.real_runs import SMALL_MZML

HOSTILE = [
    [],
    [Param("none")],
    [Param("flag", "MS:1", True), Param("off", None, False, "UO:1")],
    [Param("int", "MS:2", 7), Param("huge", "MS:3", 2**70), Param("negative", "MS:4", -(2**63))],
    [Param("float", "MS:5", 1.5, "MS:1000040"), Param("numpy float", "MS:6", np.float64(2.5))],
    [Param("numpy int", "MS:7", np.int64(3)), Param("text", "MS:8", "abc"), Param("", "", "")],
    [Param(None, None, None, None)],
    [],
]


def _parquet(array: pa.Array) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table({"parameters": array}), sink)
    return sink.getvalue()


def _assert_same(rows: list[list[Param]]) -> None:
    gathered = ParamLists()
    for params in rows:
        gathered.add(params)
    built = gathered.finish()
    expected = pa.array([param_rows(params) for params in rows], PARAM_LIST_TYPE)
    assert built.type == expected.type
    assert built.to_pylist() == expected.to_pylist()
    assert built.equals(expected)
    assert _parquet(built) == _parquet(expected)


def _run_params(path: Path) -> list[list[Param]]:
    survey = MzMLFormat.survey(str(path))
    offsets = survey.spectrum_offsets
    items = ItemRange(SPECTRA, 0, survey.spectrum_count, int(offsets[0]), int(offsets[-1]))
    rows = []
    for record in MzMLFormat.read(str(path), items, survey.hints):
        rows.append(record.params)
        rows.extend(scan.params for scan in record.scans)
        for precursor in record.precursors:
            rows += [precursor.isolation_window, precursor.activation]
            rows.extend(ion.params for ion in precursor.selected_ions)
    return rows


@pytest.mark.parametrize(
    "path", [SMALL_MZML, DATA / "openms" / "MS3_nonHierarchical.mzML"], ids=lambda p: p.name
)
def test_param_lists_equal_row_by_row_conversion_on_real_runs(path: Path) -> None:
    rows = _run_params(path)
    assert sum(map(len, rows)) > 100
    _assert_same(rows)


def test_param_lists_equal_row_by_row_conversion_on_every_kind_of_value() -> None:
    _assert_same(HOSTILE)
    _assert_same([[]])
    _assert_same([])


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(allow_nan=False).map(np.float64),
    st.integers(-(2**63), 2**63 - 1).map(np.int64),
    st.text(max_size=5),
)


@given(st.lists(_VALUES, max_size=30))
def test_value_slots_are_each_values_own_slots(values) -> None:
    """The four slot columns of many values, filled at once, hold what each value's own
    ``_value_row`` gives it (same types too: a numpy float becomes a Python float)."""
    columns = _value_slots(values)
    for i, value in enumerate(values):
        expected = _value_row(value)
        got = dict(
            zip(("integer", "float", "string", "boolean"), (c[i] for c in columns), strict=True)
        )
        assert {k: (type(v), repr(v)) for k, v in got.items()} == {
            k: (type(v), repr(v)) for k, v in expected.items()
        }
