"""Chunk boundaries: invariants on generated spectra and agreement with the reference archive."""

from __future__ import annotations

import io
import zipfile
from functools import lru_cache

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mzpeak_dask.errors import OptionsError
from mzpeak_dask.transforms.chunking import (
    chunk_boundaries,
    chunk_boundaries_of_runs,
    chunk_bounds,
)
from mzpeak_dask.transforms.null_marking import null_pair_mask
from mzpeak_dask.transforms.zero_runs import zero_run_keep_mask

from ..conftest import DATA
from ..helpers.real_runs import stripped_small_spectra


@st.composite
def marked_spectra(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """Sorted m/z with zero runs stripped and null pairs marked, as the writer produces them."""
    blocks = draw(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 6)), max_size=25))
    intensity: list[float] = []
    for zeros, peak in blocks:
        intensity += [0.0] * zeros + [1.0] * peak
    intensity += [0.0] * draw(st.integers(0, 3))
    spacing = draw(
        st.lists(st.floats(0.001, 40.0), min_size=len(intensity), max_size=len(intensity))
    )
    mz = draw(st.floats(50.0, 500.0)) + np.cumsum(spacing)
    intensity = np.array(intensity)
    keep = zero_run_keep_mask(intensity)
    return mz[keep], ~null_pair_mask(intensity[keep])


@st.composite
def arbitrary_masks(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    valid = np.array(draw(st.lists(st.booleans(), max_size=60)), dtype=bool)
    spacing = draw(st.lists(st.floats(0.01, 30.0), min_size=valid.size, max_size=valid.size))
    return 100.0 + np.cumsum(spacing), valid


widths = st.sampled_from([0.5, 5.0, 25.0, 50.0, 1000.0])


def check_partition(offsets: np.ndarray, n: int) -> None:
    assert offsets.dtype == np.int64
    assert offsets[0] == 0 and offsets[-1] == n
    assert np.all(np.diff(offsets) > 0) or n == 0  # ascending, non-empty, non-overlapping
    owner = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    assert np.array_equal(np.sort(owner), owner) and owner.size == n  # each point exactly once


def check_min_points(offsets: np.ndarray, valid: np.ndarray, min_points: int) -> None:
    if valid.size == 0:
        return
    per_chunk = np.add.reduceat(valid.astype(int), offsets[:-1])
    if valid.sum() >= min_points:
        assert np.all(per_chunk >= min_points)
    else:
        assert offsets.size == 2


@given(marked_spectra(), widths, st.sampled_from([1, 2, 3]))
def test_invariants_on_marked_spectra(spectrum, width: float, min_points: int) -> None:
    mz, valid = spectrum
    offsets = chunk_boundaries(mz, valid, width, min_points=min_points)
    check_partition(offsets, mz.size)
    check_min_points(offsets, valid, min_points)
    inner = offsets[1:-1]
    # a cut never separates a null from the value it flanks: both sides valid, or both null
    assert np.all(valid[inner - 1] == valid[inner])
    start, end = chunk_bounds(mz, valid, offsets)
    if valid.any():
        assert np.all(start <= end) and np.all(end[:-1] < start[1:])


@given(arbitrary_masks(), widths, st.sampled_from([1, 2]))
def test_invariants_on_arbitrary_masks(spectrum, width: float, min_points: int) -> None:
    mz, valid = spectrum
    offsets = chunk_boundaries(mz, valid, width, min_points=min_points)
    check_partition(offsets, mz.size)
    check_min_points(offsets, valid, min_points)


@given(st.lists(st.floats(0.001, 2.0), min_size=1, max_size=300), st.floats(100.0, 900.0))
def test_dense_arrays_cut_where_the_bin_changes(spacing: list[float], origin: float) -> None:
    width = 10.0
    mz = origin + np.concatenate(([0.0], np.cumsum(spacing)))
    offsets = chunk_boundaries(mz, np.ones(mz.size, dtype=bool), width)
    bins = np.maximum(np.ceil((mz - mz[0]) / width), 1)
    changes = set((np.flatnonzero(np.diff(bins)) + 1).tolist())
    cuts = set(offsets[1:-1].tolist())
    assert cuts <= changes
    missing = changes - cuts
    assert not missing or missing == {max(changes)}  # only a one-point last bin is merged


def test_edge_cases() -> None:
    empty = np.array([])
    assert chunk_boundaries(empty, empty.astype(bool), 50.0).tolist() == [0]
    assert chunk_boundaries(np.zeros(3), np.zeros(3, dtype=bool), 50.0).tolist() == [0, 3]
    one = chunk_boundaries(np.array([0, 500.0, 0]), np.array([0, 1, 0], dtype=bool), 1.0)
    assert one.tolist() == [0, 3]
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(OptionsError):
            chunk_boundaries(np.arange(3.0), np.ones(3, dtype=bool), bad)
    with pytest.raises(ValueError):
        chunk_boundaries(np.arange(3.0), np.ones(3, dtype=bool), 1.0, min_points=0)


def test_first_bin_spans_one_width_from_the_start() -> None:
    values = np.array([100.0, 100.5, 150.0, 150.5, 160.0, 260.0])
    offsets = chunk_boundaries(values, np.ones(6, dtype=bool), 50.0, min_points=1)
    assert offsets.tolist() == [0, 3, 5, 6]  # thresholds 150, 200, 250, 300
    offsets = chunk_boundaries(values, np.ones(6, dtype=bool), 50.0)
    assert offsets.tolist() == [0, 3, 6]  # the lone 260.0 joins the chunk before it


def test_null_pair_is_cut_between_its_nulls() -> None:
    values = np.array([100.0, 100.1, 100.2, 0, 0, 160.0, 160.1, 160.2])
    valid = values != 0
    assert chunk_boundaries(values, valid, 50.0).tolist() == [0, 4, 8]
    # the trigger ends its segment: it stays with its right-flank null, the cut follows that null
    values = np.array([100.0, 100.1, 151.0, 0, 0, 170.0, 170.1])
    assert chunk_boundaries(values, values != 0, 50.0).tolist() == [0, 4, 7]


def test_chunk_bounds_single_point_chunk_gets_real_end() -> None:
    values = np.array([0, 10.0, 0, 0, 20.0, 20.5, 0])
    valid = values != 0
    start, end = chunk_bounds(values, valid, np.array([0, 3, 7]))
    assert start.tolist() == [10.0, 20.0] and end.tolist() == [10.0, 20.5]


@lru_cache(maxsize=1)
def reference_chunks() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    with zipfile.ZipFile(DATA / "HUPO-PSI_mzPeak" / "small.chunked.mzpeak") as archive:
        table = pq.read_table(io.BytesIO(archive.read("spectra_data.parquet")))
    chunk = table.column("chunk").combine_chunks()
    return (
        pc.struct_field(chunk, "spectrum_index").to_numpy(),
        pc.list_value_length(pc.struct_field(chunk, "intensity")).to_numpy(),
        pc.struct_field(chunk, "mz_chunk_start").to_numpy(),
        pc.struct_field(chunk, "mz_chunk_end").to_numpy(),
    )


def source_spectra() -> list[tuple[np.ndarray, np.ndarray]]:
    """(m/z, valid) of every spectrum of small.mzML, stripped and marked when profile."""
    return [
        (mz, ~null_pair_mask(intensity) if profile else np.ones(mz.size, dtype=bool))
        for mz, intensity, profile in stripped_small_spectra()
    ]


def test_boundaries_match_reference_archive() -> None:
    index, sizes, ref_start, ref_end = reference_chunks()
    merged_tails = 0
    for i, (mz, valid) in enumerate(source_spectra()):
        rows = index == i
        ref = np.concatenate(([0], np.cumsum(sizes[rows])))
        ours = chunk_boundaries(mz, valid, 50.0)
        if not np.array_equal(ours, ref):
            # the only difference allowed: the reference's one-point last chunk, merged by us
            assert sizes[rows][-1] == 1 and np.array_equal(ours, np.r_[ref[:-2], ref[-1]])
            merged_tails += 1
        start, end = chunk_bounds(mz, valid, ref)
        assert np.array_equal(start, ref_start[rows])
        single = ref_end[rows] == 0.0  # the reference's quirk for one-value chunks
        assert np.array_equal(end[~single], ref_end[rows][~single])
        assert np.array_equal(end[single], start[single])
    assert 0 < merged_tails < 20


@given(
    st.lists(marked_spectra() | arbitrary_masks(), max_size=6),
    widths,
    st.sampled_from([1, 2, 3]),
)
def test_boundaries_of_runs_are_each_runs_boundaries(
    spectra, width: float, min_points: int
) -> None:
    """A partition's spectra cut at once, over their concatenation, are cut where each is cut
    alone (empty spectra, spectra without a non-null value and all-null runs at the ends
    included); their chunk bounds too."""
    spectra = [*spectra, (np.zeros(0), np.zeros(0, dtype=bool))]
    values = np.concatenate([mz for mz, _ in spectra])
    valid = np.concatenate([ok for _, ok in spectra])
    lengths = np.array([len(mz) for mz, _ in spectra], dtype=np.int64)
    together = chunk_boundaries_of_runs(values, valid, lengths, width, min_points=min_points)
    assert len(together) == len(spectra)
    starts = np.cumsum(lengths) - lengths
    everywhere = [o[:-1] + s for o, s in zip(together, starts, strict=True)]
    first, last = chunk_bounds(values, valid, np.append(np.concatenate(everywhere), len(values)))
    at = 0
    for (mz, ok), offsets in zip(spectra, together, strict=True):
        alone = chunk_boundaries(mz, ok, width, min_points=min_points)
        assert offsets.tolist() == alone.tolist()
        n = len(offsets) - 1
        alone_first, alone_last = chunk_bounds(mz, ok, alone)
        assert np.array_equal(first[at : at + n], alone_first, equal_nan=True)
        assert np.array_equal(last[at : at + n], alone_last, equal_nan=True)
        at += n


def test_boundaries_of_runs_reject_what_boundaries_reject() -> None:
    with pytest.raises(OptionsError):
        chunk_boundaries_of_runs(np.zeros(2), np.ones(2, bool), np.array([2]), 0.0)
    with pytest.raises(OptionsError):
        chunk_boundaries_of_runs(np.zeros(2), np.ones(2, bool), np.array([2]), 1.0, min_points=0)
