"""The chunked layout on the real profile runs: delta and basic read back exactly what the point
layout holds, Numpress within its error, and every chunk follows the format's rules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pytest

from mzpeak_dask import ConvertOptions, convert, open_archive
from mzpeak_dask.codecs import numpress
from mzpeak_dask.format import vocabulary as V

from ..conftest import DATA, INLINE
from ..helpers.real_runs import PROFILE_RUNS

pytestmark = pytest.mark.slow  # real runs converted in every encoding


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> dict:
    """Each run in the point layout and in every chunk encoding (centroid spectra in
    spectra_data in both, the default; as basic chunks in the chunked layout)."""
    out = {}
    folder = tmp_path_factory.mktemp("chunked")
    variants = {
        "point": ConvertOptions(),
        "delta": ConvertOptions(layout="chunked"),
        "basic": ConvertOptions(layout="chunked", chunk_encoding="basic"),
        "numpress": ConvertOptions(
            layout="chunked", chunk_encoding="numpress", numpress_intensity="slof"
        ),
    }
    for run in PROFILE_RUNS:
        for name, options in variants.items():
            path = folder / f"{run.stem}.{name}.mzpeak"
            convert(run, path, options, cluster=INLINE)
            out[run.name, name] = path
    return out


@pytest.mark.parametrize("run", PROFILE_RUNS, ids=lambda p: p.name)
@pytest.mark.parametrize("encoding", ["delta", "basic"])
def test_lossless_encodings_equal_the_point_layout(archives, run: Path, encoding: str) -> None:
    with (
        open_archive(archives[run.name, "point"]) as point,
        open_archive(archives[run.name, encoding]) as chunked,
    ):
        assert len(point) == len(chunked)
        for a, b in zip(point, chunked, strict=True):
            assert a.arrays.keys() == b.arrays.keys()
            for name in a.arrays:
                assert np.array_equal(a.arrays[name], b.arrays[name]), (a.index, name)
        for i in range(point.chromatogram_count):
            x, y = point.read_chromatogram(i), chunked.read_chromatogram(i)
            assert np.array_equal(x.time, y.time) and np.array_equal(x.intensity, y.intensity)


@pytest.mark.parametrize("run", PROFILE_RUNS, ids=lambda p: p.name)
def test_numpress_within_its_error(archives, run: Path) -> None:
    with (
        open_archive(archives[run.name, "point"]) as point,
        open_archive(archives[run.name, "numpress"]) as lossy,
    ):
        for a, b in zip(point, lossy, strict=True):
            assert len(a) == len(b)
            nonzero = a.intensity != 0
            if nonzero.any():
                mz_error = np.abs(a.mz - b.mz)[nonzero] / a.mz[nonzero]
                assert mz_error.max() < 1e-6  # linear: <= 0.5 / fixed point
                big = a.intensity >= 1
                relative = np.abs(a.intensity[big] - b.intensity[big]) / a.intensity[big]
                assert relative.size == 0 or relative.max() < 5e-4  # SLOF: <= 0.5 / fixed point


def _chunk_rows(path: Path) -> dict:
    with open_archive(path) as archive:
        signal = archive.signal("spectrum")
        table = signal.file.read(use_threads=False).column("chunk").combine_chunks()
        representation = archive.tables_of("spectrum").representations
    rows = {f.name: table.field(f.name).to_pylist() for f in table.type}
    rows["representation"] = [representation[i] for i in rows["spectrum_index"]]
    return rows


@pytest.mark.parametrize("encoding", ["delta", "basic", "numpress"])
def test_chunks_follow_the_rules(archives, encoding: str) -> None:
    rows = _chunk_rows(archives["small.mzML", encoding])
    last_end: dict[int, float] = {}
    for k, index in enumerate(rows["spectrum_index"]):
        start, end = rows["mz_chunk_start"][k], rows["mz_chunk_end"][k]
        assert start <= end  # the real end, also for a one-point chunk
        assert start > last_end.get(index, -np.inf)  # ascending, non-overlapping
        last_end[index] = end
        if rows["representation"][k] == V.CENTROID_SPECTRUM:
            assert rows["chunk_encoding"][k] == V.NO_COMPRESSION
        if encoding == "numpress" and rows["chunk_encoding"][k] == V.NUMPRESS_LINEAR:
            packed = np.asarray(rows["mz_numpress_linear_bytes"][k], np.uint8)
            assert len(packed) != 12  # never a single-value Numpress buffer
            values = numpress.decode_linear(packed)
            real = values[values != 0]
            assert real[0] == pytest.approx(start, abs=1e-6)
            assert real[-1] == pytest.approx(end, abs=1e-6)
    assert len(set(rows["spectrum_index"])) == 48


def test_chromatograms_are_chunked_along_time(archives) -> None:
    with open_archive(archives["small.mzML", "delta"]) as archive:
        table = archive.signal("chromatogram").file.read(use_threads=False)
        names = [f.name for f in table.schema.field("chunk").type]
        assert names[:5] == [
            "chromatogram_index",
            "time_chunk_start",
            "time_chunk_end",
            "time_chunk_values",
            "chunk_encoding",
        ]
        starts = pc.struct_field(table.column("chunk"), "time_chunk_start").to_pylist()
        assert len(starts) == 1  # a 0.5-minute TIC fits one 50-minute chunk


def test_info_names_the_lossy_columns(archives) -> None:
    from mzpeak_dask.read.summary import summarize

    with open_archive(archives["small.mzML", "numpress"]) as archive:
        lossy = summarize(archive)["lossy"]
    assert any("intensity_numpress_slof_bytes" in item for item in lossy)
    assert any("MS-Numpress linear" in item for item in lossy)
    with open_archive(archives["small.mzML", "delta"]) as archive:
        assert summarize(archive)["lossy"] == []


def test_peak_lists_beside_profiles(tmp_path) -> None:
    output = tmp_path / "peaks.mzpeak"
    convert(
        DATA / "mzdata" / "small.mzML",
        output,
        ConvertOptions(layout="chunked", peaks=True),
        cluster=INLINE,
    )
    with open_archive(output) as archive:
        profile, centroid = archive[0], archive[2]
        peaks = archive.read_peaks(0)
        assert len(peaks) > 0 and len(peaks) < np.count_nonzero(profile.intensity)
        assert np.all(np.diff(peaks.mz) > 0)
        # every peak lies between profile points and its height is at least the local maximum
        assert peaks.mz.min() >= profile.mz.min() and peaks.mz.max() <= profile.mz.max()
        assert archive.read_peaks(2) is None and len(centroid) == 485


def test_centroids_in_the_peaks_member(tmp_path) -> None:
    output = tmp_path / "spec.mzpeak"
    convert(
        DATA / "mzdata" / "small.mzML", output, ConvertOptions(centroids="peaks"), cluster=INLINE
    )
    with (
        open_archive(output) as archive,
        open_archive(DATA / "HUPO-PSI_mzPeak" / "small.mzpeak") as reference,
    ):
        assert archive.member("spectrum", "peaks") == "spectra_peaks.parquet"
        for ours, theirs in zip(archive, reference, strict=True):
            assert len(ours) == len(theirs)
            if ours.is_centroid:  # read transparently from spectra_peaks
                assert np.array_equal(ours.mz, theirs.mz)


def test_centroid_spectra_by_default_in_spectra_data(tmp_path) -> None:
    """Centroid-only spectra go to spectra_data in both layouts unless ``centroids="peaks"``
    is asked for: the specification's ``peaks`` kind is a view beside ``data arrays``."""
    assert not ConvertOptions().centroids_in_peaks
    assert not ConvertOptions(layout="chunked").centroids_in_peaks
    assert ConvertOptions(layout="chunked", centroids="peaks").centroids_in_peaks
    source = DATA / "mzdata" / "small.mzML"
    point, chunked = tmp_path / "point.mzpeak", tmp_path / "chunked.mzpeak"
    convert(source, point, cluster=INLINE)
    convert(source, chunked, ConvertOptions(layout="chunked"), cluster=INLINE)
    with open_archive(point) as a, open_archive(chunked) as b:
        assert a.member("spectrum", "peaks") is None
        assert b.member("spectrum", "peaks") is None
        assert a.signal("spectrum").item_indices().tolist() == list(range(48))
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x.mz, y.mz) and np.array_equal(x.intensity, y.intensity)
    rows = _chunk_rows(chunked)
    assert len(set(rows["spectrum_index"])) == 48
    centroid = [k for k, r in enumerate(rows["representation"]) if r == V.CENTROID_SPECTRUM]
    assert centroid and {rows["chunk_encoding"][k] for k in centroid} == {V.NO_COMPRESSION}


@pytest.mark.parametrize("run", PROFILE_RUNS, ids=lambda p: p.name)
def test_peak_lists_of_profile_runs_beside_their_signal(run: Path, tmp_path: Path) -> None:
    """With ``--peaks``, spectra_data holds every spectrum with points and spectra_peaks only
    the peak lists picked from the profile spectra."""
    output = tmp_path / "peaks.mzpeak"
    convert(run, output, ConvertOptions(peaks=True), cluster=INLINE)
    with open_archive(output) as archive:
        with_points = [s.index for s in archive if len(s)]
        profile = [s.index for s in archive if s.representation == V.PROFILE_SPECTRUM]
        assert archive.signal("spectrum").item_indices().tolist() == with_points
        peaks = archive.signal("spectrum", "peaks")
        assert peaks is not None and profile
        assert set(peaks.item_indices().tolist()) <= set(profile)
