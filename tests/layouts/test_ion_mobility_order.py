"""Spectra whose points are not in m/z order (timsTOF diaPASEF: points follow the mobility
scans): the point layout keeps the source order and does not declare m/z sorted; the chunked
layout sorts each spectrum by m/z with the other arrays carried along; range queries and XICs
equal a brute-force sum over the source read by pyteomics."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pytest
from pyteomics import mzml

from mzpeak_dask import ConvertOptions, convert, open_archive
from mzpeak_dask.analysis import open_runs, xic
from mzpeak_dask.analysis.archive_run import raw_spectrum
from mzpeak_dask.read.validate import ERROR, validate

from ..conftest import DATA, INLINE

SOURCE = DATA / "mzdata" / "diaPASEF.mzML"
MOBILITY = "mean inverse reduced ion mobility array"
ARRAYS = ("m/z array", "intensity array", MOBILITY)
LOW, HIGH = 600.0, 601.0


@lru_cache(maxsize=1)
def source() -> list[dict[str, np.ndarray]]:
    with mzml.MzML(str(SOURCE)) as reader:
        return [{k: s[k].astype(np.float64) for k in ARRAYS} for s in reader]


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("mobility")
    out = {}
    for layout in ("point", "chunked"):
        out[layout] = folder / f"{layout}.mzpeak"
        convert(SOURCE, out[layout], ConvertOptions(layout=layout), cluster=INLINE)
    return out


def _array_index(path: Path) -> tuple[list[dict], object]:
    with open_archive(path) as archive:
        signal = archive.signal("spectrum")
        kv = signal.file.metadata.metadata
        schema = signal.file.schema_arrow
    return json.loads(kv[b"spectrum_array_index"])["entries"], schema


def test_source_points_are_not_in_mz_order() -> None:
    assert not all(np.all(np.diff(s["m/z array"]) >= 0) for s in source())


def test_point_layout_keeps_source_order_and_claims_no_sort(archives) -> None:
    entries, schema = _array_index(archives["point"])
    assert all(e["sorting_rank"] is None for e in entries)
    assert all(b"sorting_rank" not in (f.metadata or {}) for f in schema.field("point").type)
    with open_archive(archives["point"]) as archive:
        for spectrum, want in zip(archive, source(), strict=True):
            for name in ARRAYS:
                assert np.array_equal(spectrum.arrays[name], want[name]), (spectrum.index, name)
    assert not [p for p in validate(archives["point"]) if p.severity == ERROR]


def test_chunked_layout_sorts_each_spectrum_losslessly(archives) -> None:
    entries, _ = _array_index(archives["chunked"])
    assert {e["path"] for e in entries if e["sorting_rank"] == 0} >= {"chunk.mz_chunk_start"}
    with open_archive(archives["chunked"]) as archive:
        rows = archive.signal("spectrum").file.read(use_threads=False).column("chunk")
        for spectrum, want in zip(archive, source(), strict=True):
            order = np.argsort(want["m/z array"], kind="stable")
            for name in ARRAYS:  # the mobility of each point travels with its m/z
                assert np.array_equal(spectrum.arrays[name], want[name][order]), name
    index = pc.struct_field(rows, "spectrum_index").to_numpy(zero_copy_only=False)
    start = pc.struct_field(rows, "mz_chunk_start").to_numpy(zero_copy_only=False)
    end = pc.struct_field(rows, "mz_chunk_end").to_numpy(zero_copy_only=False)
    assert np.all(start <= end)
    same = index[1:] == index[:-1]
    assert np.all(start[1:][same] > end[:-1][same])  # ascending, non-overlapping
    assert not [p for p in validate(archives["chunked"]) if p.severity == ERROR]


def _brute_force() -> tuple[np.ndarray, list[np.ndarray]]:
    sums, points = [], []
    for s in source():
        inside = (s["m/z array"] >= LOW) & (s["m/z array"] <= HIGH)
        sums.append(s["intensity array"][inside].sum())
        points.append(np.sort(s["m/z array"][inside]))
    return np.array(sums), points


@pytest.mark.parametrize("layout", ["point", "chunked"])
def test_range_queries_and_xic_equal_brute_force(archives, layout: str) -> None:
    sums, points = _brute_force()
    assert sums.sum() > 0 and sum(len(p) for p in points) == 161
    middle, half = (LOW + HIGH) / 2, (HIGH - LOW) / 2
    got = xic(open_runs([archives[layout]]), [middle], ppm=half / middle * 1e6, ms_level=None)
    frame = next(iter(got.values()))
    assert np.allclose(frame[middle].to_numpy(), sums, rtol=1e-12, atol=0)
    for i, want in enumerate(points):
        mz, _ = raw_spectrum(archives[layout], i, (np.array([LOW]), np.array([HIGH])))
        assert np.array_equal(np.sort(mz[(mz >= LOW) & (mz <= HIGH)]), want), i
