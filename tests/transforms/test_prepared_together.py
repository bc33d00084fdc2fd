"""A partition's signals prepared together (zero runs, null marks and the order check over the
concatenated arrays) are, item by item, the signals prepared one spectrum at a time: on every
profile run of ../shared/data, a centroid run, and hostile spectra (empty, all zeros, one
point, zero runs at the ends, a NaN m/z, unsorted points, spectra with a column missing)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mzpeak_dask import ConvertOptions
from mzpeak_dask.encode.partition import prepare_signal, prepare_signals
from mzpeak_dask.format import vocabulary as V
from mzpeak_dask.layouts.schema import PreparedSignal, SignalSchema
from mzpeak_dask.model.records import SignalArray
from mzpeak_dask.readers import SPECTRA, MzMLFormat
from mzpeak_dask.readers.base import ItemRange
from mzpeak_dask.transforms.null_marking import null_pair_mask, verified_null_mask
from mzpeak_dask.transforms.null_masks import null_pair_masks, verified_null_masks
from mzpeak_dask.transforms.sorting import is_sorted, runs_sorted
from mzpeak_dask.transforms.zero_runs import zero_run_keep_mask, zero_run_keep_masks

from ..conftest import DATA
from ..helpers.real_runs import PROFILE_RUNS

CENTROID_RUN = DATA / "openms" / "FeatureFinderMultiplex_9_input.mzML"
OPTIONS = [
    ConvertOptions(),
    ConvertOptions(layout="chunked"),
    ConvertOptions(strip_zero_runs=False),
    ConvertOptions(null_marking=False),
    ConvertOptions(null_marking_ppm=0.01),  # many pairs fail the check: unmarking rounds
]


def _items(path: Path) -> list[tuple[int, list[SignalArray], bool]]:
    survey = MzMLFormat.survey(str(path))
    offsets = survey.spectrum_offsets
    items = ItemRange(SPECTRA, 0, survey.spectrum_count, int(offsets[0]), int(offsets[-1]))
    records = MzMLFormat.read(str(path), items, survey.hints)
    return [(k, r.arrays, r.is_profile) for k, r in enumerate(records) if r.entity == V.SPECTRUM]


def _same(a: PreparedSignal, b: PreparedSignal) -> None:
    assert (a.index, a.length, a.profile, a.ordered) == (b.index, b.length, b.profile, b.ordered)
    assert a.model == b.model
    assert a.values.keys() == b.values.keys()
    for name, values in a.values.items():
        assert values.dtype == b.values[name].dtype, name
        assert values.tobytes() == b.values[name].tobytes(), name
    assert (a.valid is None) == (b.valid is None)
    if a.valid is not None:
        assert np.array_equal(a.valid, b.valid)


def _assert_together_is_alone(items, options: ConvertOptions) -> list[PreparedSignal]:
    schema = SignalSchema.from_sample(
        V.SPECTRUM, [arrays for _, arrays, _ in items], null_marking=options.null_marking
    )
    together = prepare_signals(schema, items, options)
    assert len(together) == len(items)
    for (index, arrays, profile), (signal, auxiliary) in zip(items, together, strict=True):
        alone, alone_auxiliary = prepare_signal(
            schema, index, arrays, profile=profile, options=options
        )
        _same(signal, alone)
        assert [a.name for a in auxiliary] == [a.name for a in alone_auxiliary]
    return [signal for signal, _ in together]


@pytest.mark.parametrize("path", [*PROFILE_RUNS, CENTROID_RUN], ids=lambda p: p.name)
def test_prepared_together_equals_one_at_a_time_on_real_runs(path: Path) -> None:
    items = _items(path)
    assert items
    for options in OPTIONS:
        signals = _assert_together_is_alone(items, options)
        if path.name == "small.mzML" and options.null_marking and options.strip_zero_runs:
            assert any(s.valid is not None for s in signals)  # null marking is exercised
            assert sum(s.length for s in signals) == 243_054  # as the reference archive


def _spectrum(mz, intensity, extra=None) -> list[SignalArray]:
    arrays = [
        SignalArray(V.MZ_ARRAY, "m/z array", V.UNIT_MZ, np.asarray(mz, dtype=np.float64)),
        SignalArray(
            V.INTENSITY_ARRAY,
            "intensity array",
            V.UNIT_DETECTOR_COUNTS,
            np.asarray(intensity, dtype=np.float32),
        ),
    ]
    if extra is not None:
        arrays.append(SignalArray(V.NON_STANDARD_ARRAY, "charge", None, extra))
    return arrays


def _profile(n: int, start: float = 400.0) -> np.ndarray:
    return start + 0.01 * np.arange(n) + 1e-7 * np.arange(n) ** 2


def test_prepared_together_on_edge_cases() -> None:
    peak = [0, 0, 0, 5, 7, 0, 0, 0, 0, 3, 0, 0]
    hostile = [
        ([], []),  # empty
        (_profile(6), [0] * 6),  # all zeros
        ([500.0], [0.0]),  # one zero point
        ([500.0], [9.0]),  # one point
        (_profile(12), peak),  # zero runs at both ends and inside
        (_profile(12, 600.0), peak[::-1]),
        (_profile(5), [0, 0, 1, 0, 0]),
        (_profile(12)[::-1].copy(), peak),  # unsorted
        (np.where(np.arange(12) == 4, np.nan, _profile(12)), peak),  # a NaN m/z
        (np.concatenate([_profile(6), _profile(6, 401.0)]), peak),  # irregular spacing
        (_profile(3), [0, 0, 0]),
    ]
    items = [(k, _spectrum(mz, i), True) for k, (mz, i) in enumerate(hostile)]
    items += [(k + 100, _spectrum(mz, i), False) for k, (mz, i) in enumerate(hostile)]
    # a spectrum with one more column than the rest, and one without intensities
    items.append((200, _spectrum(_profile(12), peak, np.arange(12, dtype=np.float64)), True))
    items.append((201, _spectrum(_profile(12), peak)[:1], True))
    for options in OPTIONS:
        _assert_together_is_alone(items, options)
        _assert_together_is_alone(items[::-1], options)


runs = st.lists(
    st.lists(st.sampled_from([0.0, 0.0, 0.0, 1.0, 250.0]), max_size=30), min_size=1, max_size=8
)


# fewer than the profile's: each example prepares the runs together and one by one
@settings(max_examples=80)
@given(runs, st.floats(0.01, 50.0), st.integers(0, 3))
def test_masks_of_runs_equal_masks_of_each_run(intensities, ppm: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    lengths = np.array([len(i) for i in intensities], dtype=np.int64)
    intensity = np.concatenate([np.asarray(i, dtype=np.float32) for i in intensities])
    steps = 0.01 * (1 + 0.3 * rng.random(intensity.shape[0]) * (seed % 2))  # some irregular
    mz = 300.0 + np.cumsum(steps)
    models = [[0.01] if k % 2 else [0.01, 1e-6, 1e-9] for k in range(len(intensities))]
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    spans = [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    expected_keep = [zero_run_keep_mask(intensity[s]) for s in spans]
    expected_pairs = [null_pair_mask(intensity[s]) for s in spans]
    expected_marks = [
        verified_null_mask(mz[s], intensity[s], np.asarray(m), ppm)
        for s, m in zip(spans, models, strict=True)
    ]
    expected_sorted = [is_sorted(mz[s], ~e) for s, e in zip(spans, expected_marks, strict=True)]
    assert (
        zero_run_keep_masks(intensity, lengths).tolist() == np.concatenate(expected_keep).tolist()
    )
    assert null_pair_masks(intensity, lengths).tolist() == np.concatenate(expected_pairs).tolist()
    marks = verified_null_masks(mz, intensity, lengths, models, ppm)
    assert marks.tolist() == np.concatenate(expected_marks).tolist()
    assert runs_sorted(mz, ~marks, lengths).tolist() == expected_sorted
