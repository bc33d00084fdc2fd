"""Basic and delta chunk codecs: null rules, exactness, round trips, and the reference archive."""

from __future__ import annotations

import io
import zipfile
from functools import lru_cache, reduce
from itertools import accumulate

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
from hypothesis import example, given
from hypothesis import strategies as st

from mzpeak_dask.codecs import basic, delta
from mzpeak_dask.transforms.chunking import chunk_boundaries
from mzpeak_dask.transforms.null_marking import fill_nulls, null_pair_mask
from mzpeak_dask.transforms.zero_runs import zero_run_keep_mask

from ..conftest import DATA
from ..helpers.real_runs import stripped_small_spectra

DELTA, BASIC = "MS:1003089", "MS:1000576"
N = float("nan")  # marks a null in the examples below


def split(values: list[float]) -> tuple[np.ndarray, np.ndarray]:
    array = np.array(values, dtype=np.float64)
    valid = ~np.isnan(array)
    return np.where(valid, array, 0.0), valid


def joined(values: np.ndarray, valid: np.ndarray) -> list[float | None]:
    return [float(v) if ok else None for v, ok in zip(values, valid, strict=True)]


def sequential_decode(start: float, values: np.ndarray, valid: np.ndarray, size: int) -> list:
    """Point-by-point oracle written from the §5.4 rules (tests only)."""
    out: list[float | None] = [start] if size == values.size + 1 else []
    last = out[0] if out else None
    for value, ok in zip(values.tolist(), valid.tolist(), strict=True):
        last = None if not ok else (value if last is None else last + value)
        out.append(last)
    return out


# --- examples of the null rules -----------------------------------------------------------------


def test_delta_encode_null_rules() -> None:
    start, values, valid = delta.encode(*split([10.0, 10.5, N, N, 20.0, 20.25, N]))
    assert start == 10.0
    assert joined(values, valid) == [0.5, None, None, 20.0, 0.25, None]
    start, values, valid = delta.encode(*split([N, 252.5, 252.75]))
    assert start == 252.5 and joined(values, valid) == [None, 252.5, 0.25]
    start, values, valid = delta.encode(*split([7.0, N, N, 9.0]))
    assert start == 7.0 and joined(values, valid) == [None, None, 9.0]
    start, values, valid = delta.encode(*split([]))
    assert np.isnan(start) and values.size == 0


def test_delta_decode_prepend_rules() -> None:
    assert joined(*delta.decode(7.0, *split([N, N, 9.0]))) == [7.0, None, None, 9.0]
    assert joined(*delta.decode(252.5, *split([N, 252.5, 0.25]))) == [None, 252.5, 252.75]
    assert joined(*delta.decode(3.0, *split([0.5, 0.25]))) == [3.0, 3.5, 3.75]
    assert joined(*delta.decode(3.0, *split([]))) == [3.0]  # one-point chunk
    assert joined(*delta.decode(N, *split([]))) == []  # empty chunk
    # a chunk that itself begins with a null pair: its first value is its start
    assert joined(*delta.decode(9.0, *split([N, N, 9.0]))) == [None, None, 9.0]
    # [s, null] and [null] both store [null]: only `size` tells them apart
    assert joined(*delta.decode(5.0, *split([N]), size=2)) == [5.0, None]
    assert joined(*delta.decode(N, *split([N]))) == [None]


def test_basic_null_rules() -> None:
    """The format's rule: points 1…n−1, the start left out, whatever the first point holds."""
    start, values, valid = basic.encode(*split([1.0, 2.0, N, N, 5.0]))
    assert start == 1.0 and joined(values, valid) == [2.0, None, None, 5.0]
    start, values, valid = basic.encode(*split([N, 2.0, 3.0]))
    assert start == 2.0 and joined(values, valid) == [2.0, 3.0]
    assert joined(*basic.decode(2.0, *split([2.0, 3.0]))) == [2.0, 2.0, 3.0]
    assert joined(*basic.decode(1.0, *split([N, N, 5.0]))) == [1.0, None, None, 5.0]
    start, values, valid = basic.encode(*split([N, N]))  # no non-null value: a NaN start
    assert np.isnan(start) and joined(values, valid) == [None]
    assert joined(*basic.decode(start, values, valid, size=2)) == [None, None]
    # a chunk an earlier version wrote with its leading null stored: told apart by its size
    assert joined(*basic.decode(2.0, *split([N, 2.0, 3.0]), size=3)) == [None, 2.0, 3.0]


# --- exactness ----------------------------------------------------------------------------------


def test_cumsum_is_sequential_unlike_sum() -> None:
    rng = np.random.default_rng(7)
    sums_differ = 0
    for _ in range(5):
        x = rng.uniform(-1e6, 1e6, 5000) * rng.choice([1e-9, 1.0, 1e9], 5000)
        sequential = np.array(list(accumulate(x.tolist())))
        assert np.array_equal(np.cumsum(x).view(np.int64), sequential.view(np.int64))
        block = np.cumsum(np.stack([x, x[::-1]]), axis=1)[0]
        assert np.array_equal(block.view(np.int64), sequential.view(np.int64))
        sums_differ += np.sum(x) != reduce(lambda a, b: a + b, x.tolist())
    assert sums_differ > 0  # np.sum is pairwise: the claim is about cumsum specifically


def test_decode_matches_sequential_oracle_on_long_chunks() -> None:
    rng = np.random.default_rng(11)
    runs = rng.geometric(0.01, 300)  # run lengths from 1 to several hundred
    valid = np.concatenate([np.r_[np.ones(k, dtype=bool), False, False] for k in runs])
    values = np.where(valid, rng.uniform(-1e3, 1e3, valid.size), 0.0)
    size = values.size + 1
    decoded = delta.decode(0.5, values, valid, size=size)
    oracle = sequential_decode(0.5, values, valid, size)
    assert [None if v is None else np.float64(v) for v in oracle] == joined(*decoded)


def test_round_trips_detects_inexact_differences() -> None:
    values, valid = split([0.1, -0.3])  # 0.1 + (-0.3 - 0.1) == -0.30000000000000004
    assert not delta.round_trips(values, valid)
    values, valid = split([1e-300, 1.0, 1e300])  # absorbed, but still exact
    assert delta.round_trips(values, valid)
    values, valid = split([0.0, -0.0])
    assert not delta.round_trips(values, valid)  # -0.0 - 0.0 + 0.0 gives +0.0
    values, valid = split([100.0, 100.001, N, N, 1e300])  # the raw value after nulls is exact
    assert delta.round_trips(values, valid)
    assert not delta.round_trips(np.array([1.0, np.inf]), np.ones(2, dtype=bool))


# --- property tests -----------------------------------------------------------------------------

finite = st.floats(allow_nan=False, allow_infinity=False)
any_chunks = st.lists(st.one_of(finite, st.none()), max_size=40)


@st.composite
def mz_like_chunks(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    size = draw(st.integers(0, 60))
    spacing = draw(st.lists(st.floats(1e-6, 50.0), min_size=size, max_size=size))
    values = draw(st.floats(50.0, 4000.0)) + np.cumsum(spacing)
    valid = np.array(draw(st.lists(st.booleans(), min_size=size, max_size=size)), dtype=bool)
    return values, valid


def arrays_of(chunk: list[float | None]) -> tuple[np.ndarray, np.ndarray]:
    valid = np.array([v is not None for v in chunk], dtype=bool)
    return np.array([0.0 if v is None else v for v in chunk], dtype=np.float64), valid


def ambiguous_without_size(values: np.ndarray, valid: np.ndarray) -> bool:
    """The shapes `starts_with_start_point` cannot tell apart without the point count."""
    if values.size < 2 or not valid[0] or valid[1]:
        return False
    if values.size == 2:
        return True  # [s, null] stores [null], like the lone-null chunk [null]
    later = np.flatnonzero(valid[1:]) + 1
    return bool(later.size and values[later[0]] == values[0])  # [s, null, null, s]


def same_points(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> bool:
    (x, xv), (y, yv) = a, b
    return np.array_equal(xv, yv) and np.array_equal(x[xv].view(np.int64), y[yv].view(np.int64))


@given(any_chunks)
def test_basic_round_trip(chunk: list[float | None]) -> None:
    """Every point back, except a leading null, which comes back as the start (the layout's
    reader makes it null again from the intensity's null)."""
    values, valid = arrays_of(chunk)
    start, out, out_valid = basic.encode(values, valid)
    assert out.size == max(0, values.size - 1)
    expected_values, expected_valid = values.copy(), valid.copy()
    if values.size and not valid[0] and valid.any():
        expected_values[0], expected_valid[0] = start, True
    expected = (expected_values, expected_valid)
    if values.size:
        assert same_points(basic.decode(start, out, out_valid, size=values.size), expected)
        assert same_points(basic.decode(start, out, out_valid), expected)


def _nan_equal(values: list[float | None]) -> list[float | str | None]:
    """The values with NaN as a marker that equals itself (NaN != NaN in a comparison)."""
    return [v if v is None or v == v else "NaN" for v in values]


@given(any_chunks)
# a spacing that overflows: inf, then inf - inf is NaN in both the decoder and the oracle
@example(chunk=[-9.9792015476736e291, 1.7976931348623157e308, -9.9792015476736e291])
def test_delta_round_trip_exactly_when_round_trips_says_so(chunk: list[float | None]) -> None:
    values, valid = arrays_of(chunk)
    start, out, out_valid = delta.encode(values, valid)
    decoded = delta.decode(start, out, out_valid, size=values.size)
    assert np.array_equal(decoded[1], valid)
    assert same_points(decoded, (values, valid)) == delta.round_trips(values, valid)
    oracle = sequential_decode(start, out, out_valid, values.size)
    expected = [None if v is None else float(np.float64(v)) for v in oracle]
    assert _nan_equal(expected) == _nan_equal(joined(*decoded))


@given(mz_like_chunks())
def test_delta_is_exact_on_mz_axes(chunk: tuple[np.ndarray, np.ndarray]) -> None:
    values, valid = chunk
    assert delta.round_trips(values, valid)
    start, out, out_valid = delta.encode(values, valid)
    assert same_points(delta.decode(start, out, out_valid, size=values.size), (values, valid))
    if not ambiguous_without_size(values, valid):
        assert same_points(delta.decode(start, out, out_valid), (values, valid))


@st.composite
def profile_or_centroid(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Whole spectra: profile ones stripped and null-marked, centroid ones sparse."""
    if draw(st.booleans()):
        blocks = draw(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 5)), max_size=20))
        intensity = np.array(sum(([0.0] * z + [1.0] * p for z, p in blocks), []))
        mz = draw(st.floats(100.0, 1000.0)) + np.arange(intensity.size) * 0.01
        keep = zero_run_keep_mask(intensity)
        return mz[keep], ~null_pair_mask(intensity[keep])
    size = draw(st.integers(0, 30))
    mz = np.sort(np.array(draw(st.lists(st.floats(50.0, 1e12), min_size=size, max_size=size))))
    return mz, np.ones(size, dtype=bool)


@given(profile_or_centroid(), st.sampled_from([0.05, 1.0, 50.0]))
def test_chunked_spectrum_round_trip_without_size(spectrum, width: float) -> None:
    mz, valid = spectrum
    offsets = chunk_boundaries(mz, valid, width)
    parts = []
    for lo, hi in zip(offsets[:-1], offsets[1:], strict=True):
        codec = delta if delta.round_trips(mz[lo:hi], valid[lo:hi]) else basic
        parts.append(codec.decode(*codec.encode(mz[lo:hi], valid[lo:hi])))
    if parts:
        decoded = (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
        assert same_points(decoded, (mz, valid))


# --- the reference chunked archive --------------------------------------------------------------


@lru_cache(maxsize=1)
def reference_rows() -> tuple[list, dict[int, np.ndarray]]:
    archive_path = DATA / "HUPO-PSI_mzPeak" / "small.chunked.mzpeak"
    with zipfile.ZipFile(archive_path) as archive:
        table = pq.read_table(io.BytesIO(archive.read("spectra_data.parquet")))
        meta = pq.read_table(io.BytesIO(archive.read("spectra_metadata.parquet")))
    chunk = table.column("chunk").combine_chunks()
    field = {name: pc.struct_field(chunk, name) for name in ("mz_chunk_values", "intensity")}
    rows = []
    for r, (index, start, encoding) in enumerate(
        zip(
            pc.struct_field(chunk, "spectrum_index").to_pylist(),
            pc.struct_field(chunk, "mz_chunk_start").to_pylist(),
            pc.struct_field(chunk, "chunk_encoding").to_pylist(),
            strict=True,
        )
    ):
        stored = field["mz_chunk_values"][r].values
        intensity = field["intensity"][r].values
        rows.append(
            (
                index,
                start,
                encoding,
                stored.fill_null(0.0).to_numpy(),
                stored.is_valid().to_numpy(zero_copy_only=False),
                intensity.fill_null(0.0).to_numpy(),
            )
        )
    models = pc.struct_field(meta.column("spectrum").combine_chunks(), "mz_delta_model")
    return rows, {i: np.array(m) for i, m in enumerate(models.to_pylist()) if m is not None}


def source_spectra() -> list[tuple[np.ndarray, np.ndarray]]:
    return [(mz, intensity) for mz, intensity, _ in stripped_small_spectra()]


def test_reference_chunks_decode_to_source() -> None:
    rows, models = reference_rows()
    assert {row[2] for row in rows} == {DELTA, BASIC}
    decoded: dict[int, list] = {}
    for index, start, encoding, stored, valid, intensity in rows:
        codec = delta if encoding == DELTA else basic
        values, values_valid = codec.decode(start, stored, valid)
        assert values.size == intensity.size
        exact = codec.decode(start, stored, valid, size=intensity.size)
        assert same_points(exact, (values, values_valid))
        # re-encoding gives the stored chunk back, bit for bit
        again = codec.encode(values, values_valid)
        assert again[0] == start and same_points(again[1:], (stored, valid))
        decoded.setdefault(index, []).append((values, values_valid, intensity))
    source = source_spectra()
    assert sorted(decoded) == list(range(len(source))) and len(source) == 48
    worst_ppm = 0.0
    for index, parts in decoded.items():
        mz = np.concatenate([p[0] for p in parts])
        valid = np.concatenate([p[1] for p in parts])
        intensity = np.concatenate([p[2] for p in parts])
        source_mz, source_intensity = source[index]
        nonzero = source_intensity != 0
        assert np.array_equal(mz[nonzero], source_mz[nonzero])
        assert np.array_equal(intensity[nonzero], source_intensity[nonzero])
        filled = fill_nulls(mz, valid, models.get(index))
        worst_ppm = max(worst_ppm, np.max(np.abs(filled - source_mz) / source_mz) * 1e6)
    assert sum(p[0].size for p in decoded[0]) == 13589
    assert worst_ppm < 0.02


@given(
    st.lists(
        st.floats(-1e3, 1e3) | st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan, 1e308]),
        max_size=40,
    ),
    st.lists(st.booleans(), min_size=40, max_size=40),
    st.lists(st.integers(0, 40), max_size=5),
    st.lists(st.booleans(), min_size=46, max_size=46),
)
def test_chunks_encoded_at_once_are_each_chunk_encoded_alone(values, valid, cuts, tried) -> None:
    """Delta where asked and where it round-trips, else basic; empty chunks, null heads,
    signed zeros, infinities and NaN included."""
    x = np.sort(np.array(values, dtype=np.float64))
    ok = np.array(valid[: len(x)], dtype=bool)
    offsets = np.array(sorted({0, len(x), *[c for c in cuts if c <= len(x)]}), dtype=np.int64)
    offsets = np.insert(offsets, 1, 0)  # an empty first chunk
    try_delta = np.array(tried[: len(offsets) - 1], dtype=bool)
    is_delta, stored = delta.encode_chunks(x, ok, offsets, try_delta)
    for k in range(len(offsets) - 1):
        chunk, chunk_ok = x[offsets[k] : offsets[k + 1]], ok[offsets[k] : offsets[k + 1]]
        alone = try_delta[k] and delta.round_trips(chunk, chunk_ok)
        _, values_alone, valid_alone = (delta if alone else basic).encode(chunk, chunk_ok)
        assert bool(is_delta[k]) == alone
        assert stored[k][0].tobytes() == values_alone.tobytes()
        assert stored[k][1].tolist() == valid_alone.tolist()
