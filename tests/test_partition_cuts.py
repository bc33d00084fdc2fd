"""How a run is cut into partitions: balanced shares whose count is a multiple of 2, 4 or 8,
within the items and bytes limits, the same whatever the cluster."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from mzpeak_dask.encode.plan import boundaries, plan_run
from mzpeak_dask.options import ConvertOptions
from mzpeak_dask.readers import SPECTRA

from .conftest import DATA


def _offsets(sizes: list[int], start: int = 1000) -> np.ndarray:
    return np.concatenate(([start], start + np.cumsum(sizes))).astype(np.int64)


@given(
    sizes=st.lists(st.integers(1, 5000), min_size=1, max_size=400),
    items=st.integers(1, 60),
    limit=st.integers(1, 40_000),
    by_bytes=st.booleans(),
)
def test_partitions_cover_every_item_once_within_the_item_limit(sizes, items, limit, by_bytes):
    options = ConvertOptions(partition_items=items, partition_bytes=limit)
    offsets = _offsets(sizes) if by_bytes else None
    stops = boundaries(len(sizes), offsets, options)
    assert stops[0] == 0 and stops[-1] == len(sizes)
    assert np.all(np.diff(stops) >= 1)
    assert np.diff(stops).max() <= items
    if by_bytes:  # each share is about the byte limit at most: over it by one item at most
        spans = np.diff(offsets[stops])
        assert np.all(spans <= limit + max(sizes) + 1) or np.diff(stops).max() == 1


def test_a_run_cut_by_count_gets_an_even_number_of_equal_shares():
    options = ConvertOptions(partition_items=1000)
    # 12,920 spectra: 13 partitions' worth, cut as 14 of 922 or 923
    stops = boundaries(12_920, None, options)
    assert len(stops) - 1 == 14
    assert set(np.diff(stops)) == {922, 923}
    # a multiple of 2 up to 15 partitions' worth, of 4 from 16, of 8 from 32: a quarter more
    # partitions at most
    worth_and_cut = [(1, 1), (2, 2), (3, 4), (5, 6), (7, 8), (9, 10), (15, 16), (16, 16)]
    worth_and_cut += [(17, 20), (31, 32), (33, 40), (50, 56), (100, 104)]
    for worth, count in worth_and_cut:
        assert len(boundaries(worth * 1000, None, options)) - 1 == count, worth
        assert count <= worth * 1.25 + 1
    assert len(boundaries(2500, None, options)) - 1 == 4
    assert list(boundaries(3, None, ConvertOptions(partition_items=1))) == [0, 1, 2, 3]
    assert list(boundaries(0, None, options)) == [0]


def test_a_run_cut_by_bytes_gets_shares_of_about_equal_bytes():
    rng = np.random.default_rng(7)
    sizes = rng.integers(2_000, 20_000, size=3000).tolist()
    offsets = _offsets(sizes)
    options = ConvertOptions(partition_bytes=int(offsets[-1] - offsets[0]) // 12)  # 12 (+1)
    stops = boundaries(3000, offsets, options)
    assert len(stops) - 1 == 14
    spans = np.diff(offsets[stops])
    assert spans.max() - spans.min() <= 2 * max(sizes)


def test_a_real_run_is_cut_into_an_even_number_of_partitions(tmp_path: Path):
    options = ConvertOptions(partition_items=10)
    plan = plan_run(DATA / "mzdata" / "small.mzML", tmp_path, options)
    spectra = [p.items for p in plan.partitions if p.items.kind == SPECTRA]
    # 48 spectra at most 10 to a partition: 5 partitions' worth, cut as 6 of about equal bytes
    assert len(spectra) == 6 and sum(len(r) for r in spectra) == 48
    assert max(len(r) for r in spectra) <= 10
    assert all(a.byte_stop == b.byte_start for a, b in zip(spectra, spectra[1:], strict=False))
