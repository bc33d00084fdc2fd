"""Arrow arrays built from buffers equal ``pa.array()``'s, and a conversion in this process
never imports pandas (``pa.array()``, ``pa.scalar()`` and ``Array.to_numpy()`` would)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mzpeak_dask.support.arrow_build import from_list, from_numpy, repeated, to_numpy
from mzpeak_dask.tables.auxiliary import AUXILIARY_TYPE
from mzpeak_dask.tables.chromatogram_metadata import CHROMATOGRAM_TYPE_STRUCT
from mzpeak_dask.tables.params import PARAM_LIST_TYPE
from mzpeak_dask.tables.spectrum_metadata import PRECURSOR_TYPE_STRUCT, SCAN_TYPE_STRUCT

from .conftest import BUNDLED, DATA, ROOT

TYPES = [PARAM_LIST_TYPE, SCAN_TYPE_STRUCT, PRECURSOR_TYPE_STRUCT, CHROMATOGRAM_TYPE_STRUCT]


def values_of(type: pa.DataType, depth: int = 0) -> st.SearchStrategy:
    """Python values of ``type`` as the table builders hold them (None: null)."""
    if pa.types.is_struct(type):
        fields = {f.name: values_of(f.type, depth + 1) for f in type}
        return st.none() | st.fixed_dictionaries({}, optional=fields)
    if pa.types.is_large_list(type) or pa.types.is_list(type):
        return st.none() | st.lists(values_of(type.value_type, depth + 1), max_size=3)
    if pa.types.is_string(type) or pa.types.is_large_string(type):
        return st.none() | st.text(max_size=6)
    if pa.types.is_boolean(type):
        return st.none() | st.booleans()
    if pa.types.is_floating(type):
        return st.none() | st.floats(allow_nan=False, width=type.bit_width)
    if pa.types.is_integer(type):
        info = np.iinfo(type.to_pandas_dtype())
        return st.none() | st.integers(int(info.min), int(info.max))
    raise AssertionError(f"no strategy for {type}")


@pytest.mark.parametrize("type", TYPES, ids=lambda t: str(t)[:40])
# fewer than the profile's: the test runs once for each of many types
@settings(max_examples=40)
@given(data=st.data())
def test_from_list_equals_pyarrow_array(type, data) -> None:
    values = data.draw(st.lists(values_of(type), max_size=6))
    built = from_list(values, type)
    built.validate(full=True)
    assert built.equals(pa.array(values, type))


def test_from_list_keeps_a_struct_of_no_fields_and_nulls() -> None:
    empty = pa.struct([])
    values = [{}, None, {}]
    assert from_list(values, empty).equals(pa.array(values, empty))
    assert from_list([], AUXILIARY_TYPE).equals(pa.array([], AUXILIARY_TYPE))


def test_from_numpy_equals_pyarrow_array_with_nulls_and_casts() -> None:
    values = np.array([1.5, -2.25, 3.0, 0.0])
    valid = np.array([True, False, True, True])
    assert from_numpy(values, pa.float64(), valid).equals(pa.array(values, mask=~valid))
    assert from_numpy(values, pa.float32()).equals(pa.array(values, pa.float32()))
    ints = np.arange(5, dtype=np.int64)
    assert from_numpy(ints, pa.uint64()).equals(pa.array(ints, pa.uint64()))
    with pytest.raises(pa.ArrowInvalid):  # a safe cast, as pa.array's
        from_numpy(np.array([-1]), pa.uint64())
    flags = np.array([True, False, True])
    assert from_numpy(flags).equals(pa.array(flags))
    assert repeated(7, 3, pa.uint64()).equals(pa.array([7, 7, 7], pa.uint64()))


def test_to_numpy_reads_slices_and_chunks() -> None:
    array = pa.array(np.arange(10, dtype=np.uint64))
    assert to_numpy(array.slice(3, 4)).tolist() == [3, 4, 5, 6]
    chunked = pa.chunked_array([array.slice(0, 2), array.slice(8)])
    assert to_numpy(chunked).tolist() == [0, 1, 8, 9]
    with_null = pa.array([1.0, None])
    assert np.isnan(to_numpy(with_null)[1])


PROBE = """
import sys
from pathlib import Path
from mzpeak_dask import ClusterOptions, ConvertOptions, convert
for source in sys.argv[2:]:
    target = Path(sys.argv[1]) / (Path(source).name + ".mzpeak")
    convert(source, target, ConvertOptions(), cluster=ClusterOptions(cluster="inline"))
print(sorted(m for m in sys.modules if m.split(".")[0] == "pandas")[:3])
"""


def test_a_conversion_in_this_process_does_not_import_pandas(tmp_path) -> None:
    """Runs with spectra, chromatograms, auxiliary arrays and mzMLb, each in a fresh process
    (pyteomics' mzXML and MGF readers import pandas themselves)."""
    sources = [
        BUNDLED / "small.mzML",
        next(DATA.rglob("small.mzMLb")),
        next(DATA.rglob("Spyogenes.chrom.mzML")),
        next(DATA.rglob("20171013_HMP_C61_ISO_P1_GA1_UV_VIS_2.mzML")),
    ]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path), *map(str, sources)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
    assert len(list(tmp_path.glob("*.mzpeak"))) == len(sources)
