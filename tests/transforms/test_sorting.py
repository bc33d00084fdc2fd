"""Main-axis order: worked examples, and a property test of what each layout does with
spectra whose points come in any order (every per-point array, auxiliary ones included,
travels with its point)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mzpeak_dask import ConvertOptions
from mzpeak_dask.encode.partition import prepare_signal
from mzpeak_dask.format import vocabulary as V
from mzpeak_dask.layouts.schema import SignalSchema
from mzpeak_dask.model.records import SignalArray
from mzpeak_dask.transforms.sorting import is_sorted, sort_order


def test_is_sorted_ignores_nulls_and_allows_ties() -> None:
    assert is_sorted(np.array([]))
    assert is_sorted(np.array([1.0, 1.0, 2.0]))
    assert not is_sorted(np.array([1.0, 3.0, 2.0]))
    assert is_sorted(np.array([1.0, 0.0, 2.0]), np.array([True, False, True]))


def test_sort_order_is_stable_and_none_when_sorted() -> None:
    assert sort_order(np.array([1.0, 2.0, 2.0])) is None
    assert sort_order(np.array([])) is None
    assert sort_order(np.array([2.0, 1.0, 2.0, 1.0])).tolist() == [1, 3, 0, 2]


def _arrays(mz: np.ndarray, intensity: np.ndarray, flags: np.ndarray) -> list[SignalArray]:
    return [
        SignalArray(V.MZ_ARRAY, "m/z array", V.UNIT_MZ, mz),
        SignalArray(V.INTENSITY_ARRAY, "intensity array", V.UNIT_DETECTOR_COUNTS, intensity),
        SignalArray(V.NON_STANDARD_ARRAY, "flags", None, flags),  # int16: auxiliary
    ]


@st.composite
def shuffled(draw) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = draw(st.integers(0, 200))
    mz = np.asarray(draw(st.lists(st.floats(100.0, 2000.0), min_size=n, max_size=n)), np.float64)
    if n and draw(st.booleans()):
        mz[: n // 2] = mz[0]  # ties
    intensity = np.arange(n, dtype=np.float64) + 1.0  # tells the points apart
    return mz, intensity, (np.arange(n) % 7).astype(np.int16)


# fewer than the profile's: each example prepares the signal in both layouts
@settings(max_examples=80)
@given(shuffled(), st.booleans())
def test_layouts_keep_or_sort_every_array_together(spectrum, profile: bool) -> None:
    mz, intensity, flags = spectrum
    schema = SignalSchema.from_sample(V.SPECTRUM, [_arrays(mz, intensity, flags)])
    for layout in ("point", "chunked"):
        options = ConvertOptions(layout=layout, null_marking=False, strip_zero_runs=False)
        signal, auxiliary = prepare_signal(
            schema, 0, _arrays(mz, intensity, flags), profile=profile, options=options
        )
        got_mz, got_intensity = signal.values["mz"], signal.values["intensity"]
        got_flags = next(a.values for a in auxiliary if a.name == "flags")
        order = np.argsort(mz, kind="stable") if layout == "chunked" else np.arange(len(mz))
        assert np.array_equal(got_mz, mz[order])
        assert np.array_equal(got_intensity, intensity[order])
        assert np.array_equal(got_flags, flags[order])
        assert signal.ordered == bool(np.all(np.diff(got_mz) >= 0))
