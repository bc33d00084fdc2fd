"""Property tests, one round-trip base for every layout: generated spectra -> prepared signal ->
the layout's table, which the layout decodes back to the stored values, and which the reader
gives back through Parquet (bit for bit for point, delta and basic; within Numpress' error for
numpress), whatever the zero runs, null pairs, sizes and values."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mzpeak_dask import ConvertOptions, layouts, options
from mzpeak_dask.archive.assembler import DataMember
from mzpeak_dask.encode.partition import prepare_signal
from mzpeak_dask.format import vocabulary as V
from mzpeak_dask.layouts.array_index import group_entries
from mzpeak_dask.layouts.schema import SignalSchema
from mzpeak_dask.model.records import SignalArray
from mzpeak_dask.read.signal import SignalReader
from mzpeak_dask.transforms.null_marking import fill_nulls


@st.composite
def spectra(draw) -> list[tuple[np.ndarray, np.ndarray, bool]]:
    """Profile spectra sampled evenly (so null marking applies) and centroid spectra with
    arbitrary gaps; zero runs of every length, single points, empty spectra, huge values."""
    out = []
    for _ in range(draw(st.integers(1, 5))):
        n = draw(st.integers(0, 300))
        profile = draw(st.booleans())
        start = draw(st.floats(50.0, 5e5, allow_nan=False))
        if profile:
            step = draw(st.floats(1e-3, 0.5))
            mz = start + step * np.arange(1, n + 1, dtype=np.float64)
        else:
            steps = draw(st.lists(st.floats(1e-4, 80.0), min_size=n, max_size=n))
            mz = start + np.cumsum(np.asarray(steps, dtype=np.float64))
        levels = st.sampled_from([0.0, 0.0, 0.0, 1.0, 7.5, 3e4, 1e15])
        intensity = np.asarray(draw(st.lists(levels, min_size=n, max_size=n)), np.float64)
        out.append((mz, intensity, profile))
    return out


def _arrays(mz: np.ndarray, intensity: np.ndarray) -> list[SignalArray]:
    return [
        SignalArray(V.MZ_ARRAY, "m/z array", V.UNIT_MZ, mz),
        SignalArray(V.INTENSITY_ARRAY, "intensity array", V.UNIT_DETECTOR_COUNTS, intensity),
    ]


def prepare(items, options: ConvertOptions):
    sample = [_arrays(mz, it) for mz, it, _ in items]
    schema = SignalSchema.from_sample(V.SPECTRUM, sample, null_marking=options.null_marking)
    prepared = [
        prepare_signal(schema, k, _arrays(mz, it), profile=profile, options=options)[0]
        for k, (mz, it, profile) in enumerate(items)
    ]
    return schema, prepared


def round_trip(items, options: ConvertOptions):
    schema, prepared = prepare(items, options)
    sink = io.BytesIO()
    member = DataMember(sink, V.SPECTRUM, schema, options)
    member.write(layouts.layout_of(options).encode(schema, prepared, options), 0)
    member.close({})
    reader = SignalReader(pa.py_buffer(sink.getvalue()), "spectrum", "memory")
    return prepared, [
        reader.read(k, np.asarray(p.model) if p.model else None) for k, p in enumerate(prepared)
    ]


def _expected(p) -> tuple[np.ndarray, np.ndarray]:
    mz, intensity = p.values.get("mz", np.zeros(0)), p.values.get("intensity", np.zeros(0))
    if p.valid is not None:
        mz = fill_nulls(mz, p.valid, np.asarray(p.model) if p.model else None)
        intensity = np.where(p.valid, intensity, 0.0)
    return mz, intensity


# fewer examples than the profile's (tests/conftest.py): each encodes and reads a whole table
PROFILE = settings(
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def test_generated_profiles_are_null_marked() -> None:
    """The generator's even profiles do get null pairs (else the properties test little)."""
    mz = 400 + 0.01 * np.arange(1, 41)
    intensity = np.array(([0.0] * 4 + [5.0, 9.0, 5.0]) * 5 + [0.0] * 5)
    prepared, read = round_trip([(mz, intensity, True)], ConvertOptions(layout="chunked"))
    assert prepared[0].valid is not None and (~prepared[0].valid).sum() >= 8
    assert np.array_equal(read[0]["m/z array"], _expected(prepared[0])[0])


def _stored(prepared, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The values the layout stores for column ``name`` of every item, and their validity."""
    parts = [p for p in prepared if p.length]
    values = np.concatenate([np.zeros(0)] + [p.values[name] for p in parts])
    masks = [p.valid if p.valid is not None else np.ones(p.length, bool) for p in parts]
    return values, np.concatenate([np.zeros(0, bool), *masks])


# the round trip every layout must pass, with the lossless chunk encodings it is tried with (the
# point layout has none of its own); a layout added to the registry must be added here
LOSSLESS = {"point": ("delta",), "chunked": ("delta", "basic")}
EVERY_LAYOUT = pytest.mark.parametrize("layout", list(LOSSLESS))


def test_every_layout_passes_the_round_trip() -> None:
    assert tuple(layouts.LAYOUTS) == options.LAYOUTS == tuple(LOSSLESS)


def _options(layout: str, data) -> ConvertOptions:
    encoding = data.draw(st.sampled_from(LOSSLESS[layout]))
    return ConvertOptions(layout=layout, chunk_encoding=encoding, row_group_points=64)


@EVERY_LAYOUT
@PROFILE
@given(items=spectra(), data=st.data())
def test_the_layout_decodes_its_own_table(layout, items, data) -> None:
    options = _options(layout, data)
    schema, prepared = prepare(items, options)
    module = layouts.LAYOUTS[layout]
    table = module.encode(schema, prepared, options)
    views = group_entries(module.array_index(schema, options))
    raw, lengths = module.decode(table.column(module.PREFIX).combine_chunks(), views)
    assert lengths.sum() == sum(p.length for p in prepared)
    assert np.array_equal(lengths, module.row_weights(table))
    for k, name in enumerate(["mz", "intensity"]):
        want, want_valid = _stored(prepared, name)
        got, got_valid = raw[k]
        got_valid = np.ones(len(got), bool) if got_valid is None else got_valid
        assert np.array_equal(got_valid, want_valid)
        assert np.array_equal(got[got_valid], want[want_valid])


@EVERY_LAYOUT
@PROFILE
@given(items=spectra(), data=st.data())
def test_lossless_layouts_round_trip(layout, items, data) -> None:
    prepared, read = round_trip(items, _options(layout, data))
    for p, got in zip(prepared, read, strict=True):
        mz, intensity = _expected(p)
        assert np.array_equal(got.get("m/z array", np.zeros(0)), mz)
        assert np.array_equal(got.get("intensity array", np.zeros(0)), intensity)


@pytest.mark.slow
@PROFILE
@given(spectra())
def test_numpress_round_trips_within_its_error(items) -> None:
    options = ConvertOptions(layout="chunked", chunk_encoding="numpress", numpress_intensity="slof")
    prepared, read = round_trip(items, options)
    for p, got in zip(prepared, read, strict=True):
        mz, intensity = _expected(p)
        got_mz = got.get("m/z array", np.zeros(0))
        assert len(got_mz) == len(mz)
        if len(mz):
            assert np.max(np.abs(got_mz - mz) / mz) < 1e-6  # linear: 0.5 / fixed point
            big = intensity >= 1
            got_int = got["intensity array"]
            assert np.all(np.abs(got_int[big] - intensity[big]) / intensity[big] < 2e-3)
