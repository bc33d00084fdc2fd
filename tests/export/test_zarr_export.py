"""The Zarr export: Zarr chunks are runs of whole spectra (never splitting an mzPeak chunk),
every mzPeak chunk is one frame of its Zarr chunk, values equal what open_archive returns (bit
for bit), per-chunk, per-spectrum and per-Zarr-chunk arrays, attributes, the files of a run,
overwrite, atomicity."""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest
import zarr
import zstandard

from mzpeak_dask import ArchiveError, InputError, OptionsError, OutputError, open_archive
from mzpeak_dask.export.zarr import to_zarr
from mzpeak_dask.zarr_runs import CHUNK_TABLES

from ..conftest import INLINE
from .builds import CHUNK_POINTS, CONVERSIONS, COPIED

pytestmark = pytest.mark.slow  # the shared archives and their export are built first

NAMES = sorted([*CONVERSIONS, *COPIED])
FAST = {
    "array.rectilinear_chunks": True,
    "codec_pipeline.path": "zarr.core.codec_pipeline.FusedCodecPipeline",
    "codec_pipeline.max_workers": 1,
}


@pytest.fixture(autouse=True)
def _zarr_settings():
    with zarr.config.set(FAST):  # the flag, and fast reads of one chunk at a time
        yield


def expected_chunks(archive, i: int, width: float = 50.0) -> tuple[dict, np.ndarray]:
    """Spectrum ``i`` and its chunk offsets, straight from the archive's signal readers (the
    data member, else the peaks member, as open_archive reads it)."""
    model = archive.tables_of("spectrum").models[i]
    data, peaks = archive.signal("spectrum"), archive.signal("spectrum", "peaks")
    arrays, offsets = data.read_chunked(i, np.asarray(model) if model else None, width)
    if not arrays and peaks is not None:
        arrays, offsets = peaks.read_chunked(i, None, width)
    return arrays, (np.unique(offsets) if arrays else np.zeros(1, np.int64))


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    return got.dtype == want.dtype and got.tobytes() == want.tobytes()


def _fill(dtype: np.dtype, n: int) -> np.ndarray:
    return np.full(n, np.nan if dtype.kind == "f" else 0, dtype=dtype)


def _frames(path, lengths: np.ndarray) -> list[bytes]:
    """The frames of one Zarr chunk object, cut by the frame sizes ``lengths``."""
    raw = path.read_bytes()
    assert len(raw) == lengths.sum()
    cuts = np.concatenate(([0], np.cumsum(lengths)))
    return [raw[a:b] for a, b in zip(cuts[:-1], cuts[1:], strict=True)]


@pytest.mark.parametrize("name", NAMES)
def test_every_mzpeak_chunk_is_one_frame_of_its_zarr_chunk(exported, name) -> None:
    """Read without zarr or the package's reader: the Zarr grid cuts only between spectra,
    ``chunk_lengths`` gives the archive's mzPeak chunks, ``zarr_chunk_first`` the first of each
    Zarr chunk, and each Zarr chunk object is their frames in order, each inflating to its
    chunk's values."""
    group = zarr.open_group(str(exported.store / name), mode="r")
    keys = group.attrs["arrays"]  # zarr name -> mzPeak array name
    assert list(keys)[:2] == ["mz", "intensity"]
    with open_archive(exported.archives[name]) as archive:
        spectra = [expected_chunks(archive, i) for i in range(len(archive))]
    lengths = np.concatenate([np.diff(offsets) for _, offsets in spectra])
    assert len(lengths) and lengths.min() > 0
    assert np.array_equal(group["chunk_lengths"][:], lengths)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    grid = np.concatenate(([0], np.cumsum(group["mz"].read_chunk_sizes[0])))
    assert np.isin(grid, group["spectrum_offsets"][:]).all()  # never inside a spectrum
    first = group["zarr_chunk_first"][:]
    assert np.array_equal(offsets[first], grid)  # hence never inside an mzPeak chunk
    blocks = np.split(group["chunk_frame_bytes"][:], first[1:-1] * len(keys))
    frame_bytes = np.concatenate([b.reshape(len(keys), -1) for b in blocks], axis=1)
    for k, (zname, key) in enumerate(keys.items()):
        array = group[zname]
        assert array.read_chunk_sizes == group["mz"].read_chunk_sizes
        frames = []
        for z in range(array.nchunks):
            sizes = frame_bytes[k, first[z] : first[z + 1]]
            frames += _frames(exported.store / name / zname / "c" / str(z), sizes)
        c = 0
        for values, bounds in spectra:
            want = values.get(key, _fill(array.dtype, int(bounds[-1])))
            for a, b in zip(bounds[:-1], bounds[1:], strict=True):
                got = np.frombuffer(zstandard.decompress(frames[c]), dtype=array.dtype)
                assert _same(got, want[a:b]), (zname, c)
                c += 1
        assert c == len(frames) == len(lengths)


@pytest.mark.parametrize("name", NAMES)
def test_chunk_tables_are_one_frame_per_zarr_chunk(exported, name) -> None:
    """Read without zarr: each per-mzPeak-chunk table's chunk objects are one Zstandard frame
    per Zarr chunk of the signal arrays (sizes in ``zarr_chunk_table_bytes``), each inflating
    to that Zarr chunk's entries; zarr reads the same values."""
    group = zarr.open_group(str(exported.store / name), mode="r")
    first = group["zarr_chunk_first"][:]
    nz = group["mz"].nchunks
    assert len(first) == nz + 1 and first[0] == 0 and np.all(np.diff(first) > 0)
    sizes = group["zarr_chunk_table_bytes"][:].reshape(len(CHUNK_TABLES), nz)
    width = len(group.attrs["arrays"])
    for t, table in enumerate(CHUNK_TABLES):
        array = group[table]
        values = array[:]
        scale = width if table == "chunk_frame_bytes" else 1
        objects = [
            (exported.store / name / table / "c" / str(c)).read_bytes()
            for c in range(array.nchunks)
        ]
        bounds = np.concatenate(([0], np.cumsum(sizes[t])))
        ends = np.cumsum([len(raw) for raw in objects])
        assert np.isin(ends, bounds).all()  # an object ends where a frame does
        joined = b"".join(objects)
        assert len(joined) == bounds[-1]
        for z in range(nz):
            frame = joined[bounds[z] : bounds[z + 1]]
            got = np.frombuffer(zstandard.decompress(frame), dtype=array.dtype)
            assert np.array_equal(got, values[first[z] * scale : first[z + 1] * scale])


@pytest.mark.parametrize("name", NAMES)
def test_arrays_equal_open_archive(exported, name) -> None:
    group = zarr.open_group(str(exported.store / name), mode="r")
    keys = group.attrs["arrays"]
    arrays = {zname: group[zname][:] for zname in keys}
    offsets = group["spectrum_offsets"][:]
    with open_archive(exported.archives[name]) as archive:
        assert len(offsets) == len(archive) + 1
        for spectrum in archive:
            a, b = offsets[spectrum.index], offsets[spectrum.index + 1]
            assert set(spectrum.arrays) <= set(keys.values())
            for zname, key in keys.items():
                want = spectrum.arrays.get(key, _fill(arrays[zname].dtype, b - a))
                assert _same(arrays[zname][a:b], want), (spectrum.index, key)


@pytest.mark.parametrize("name", ["ref.chunked", "small.peaks", "kitchen.point", "metabo.point"])
def test_chunk_and_spectrum_tables(exported, name) -> None:
    path = exported.archives[name]
    group = zarr.open_group(str(exported.store / name), mode="r")
    mz = group["mz"][:]
    lengths = group["chunk_lengths"][:]
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    chunk_spectrum = group["chunk_spectrum_index"][:]
    offsets = group["spectrum_offsets"][:]
    assert np.array_equal(group["chunk_start"][:], mz[starts])
    assert np.array_equal(group["chunk_end"][:], mz[starts + lengths - 1])
    # each chunk lies inside its spectrum's point range
    assert np.all(offsets[chunk_spectrum] <= starts)
    assert np.all(starts + lengths <= offsets[chunk_spectrum + 1])
    assert np.all(np.diff(chunk_spectrum) >= 0)
    with open_archive(path) as archive:
        spectra = list(archive)
        assert np.array_equal(group["time"][:], [s.time for s in spectra])
        assert np.array_equal(group["ms_level"][:], [s.ms_level or 0 for s in spectra])
        precursor = [s.precursors[0].target_mz if s.precursors else np.nan for s in spectra]
        assert np.array_equal(group["precursor_mz"][:], np.array(precursor, float), equal_nan=True)
    assert group.attrs["source"] == str(path.resolve())
    assert group.attrs["source_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert group.attrs["layout"] == name.split(".")[1].replace("peaks", "point")
    assert group.attrs["chunk_points"] == CHUNK_POINTS
    # per Zarr chunk: the ranges of m/z and time of what it holds
    grid = np.concatenate(([0], np.cumsum(group["mz"].read_chunk_sizes[0])))
    times = np.repeat(group["time"][:], np.diff(offsets))
    for z in range(len(grid) - 1):
        values, when = mz[grid[z] : grid[z + 1]], times[grid[z] : grid[z + 1]]
        assert group["zarr_chunk_mz_min"][z] == np.nanmin(values)
        assert group["zarr_chunk_mz_max"][z] == np.nanmax(values)
        assert group["zarr_chunk_time_min"][z] == np.nanmin(when)
        assert group["zarr_chunk_time_max"][z] == np.nanmax(when)


def test_reference_chunk_grid_from_raw_rows(exported) -> None:
    """Independent of the reader: one Zarr chunk per non-empty row of the reference writer's
    chunk table, its length the row's intensity list length."""
    with open_archive(exported.archives["ref.chunked"]) as archive:
        chunk = archive.signal("spectrum").file.read().column("chunk").combine_chunks()
    index = chunk.field("spectrum_index").to_numpy()
    lengths = np.diff(chunk.field("intensity").offsets.to_numpy())
    lengths = lengths[np.argsort(index, kind="stable")]
    group = zarr.open_group(str(exported.store / "ref.chunked"), mode="r")
    assert len(lengths) == 1311
    assert np.array_equal(group["chunk_lengths"][:], lengths[lengths > 0])
    assert group["intensity"].nchunks > 5  # 243,054 points in Zarr chunks of about 20,000
    assert np.array_equal(group["chunk_spectrum_index"][:], np.sort(index)[lengths > 0])


@pytest.mark.parametrize("source", ["small", "metabo"])
def test_point_archive_gets_the_chunked_layouts_grid(exported, source) -> None:
    """A point archive's chunks are those our chunked layout writes for the same run."""
    point = zarr.open_group(str(exported.store / f"{source}.point"), mode="r")
    chunked = zarr.open_group(str(exported.store / f"{source}.chunked"), mode="r")
    assert np.array_equal(point["chunk_lengths"][:], chunked["chunk_lengths"][:])
    assert np.array_equal(point["mz"][:], chunked["mz"][:])


def _mzpeak_chunks(group) -> np.ndarray:
    return group["chunk_lengths"][:]


def test_chunk_width_overwrite_and_atomic_groups(exported, tmp_path) -> None:
    archive = exported.archives["metabo.point"]
    store = tmp_path / "w.zarr"
    (first,) = to_zarr([archive], store, cluster=INLINE)
    wide = len(_mzpeak_chunks(zarr.open_group(str(store / "metabo.point"), mode="r")))
    assert first.chunks == wide and first.spectra == 380 and first.zarr_chunks == 1
    with pytest.raises(OutputError, match="already exists"):
        to_zarr([archive], store, cluster=INLINE, chunk_width=5.0)
    assert len(_mzpeak_chunks(zarr.open_group(str(store / "metabo.point"), mode="r"))) == wide
    to_zarr([archive], store, cluster=INLINE, chunk_width=5.0, overwrite=True)
    group = zarr.open_group(str(store / "metabo.point"), mode="r")
    assert group.attrs["chunk_width"] == 5.0
    assert len(_mzpeak_chunks(group)) > wide
    with open_archive(archive) as a:
        want = [np.diff(expected_chunks(a, i, 5.0)[1]) for i in range(len(a))]
    assert np.array_equal(_mzpeak_chunks(group), np.concatenate(want))
    assert sorted(p.name for p in store.iterdir()) == ["metabo.point", "zarr.json"]


def _files(root) -> list[str]:
    return [os.path.join(d, f) for d, _, files in os.walk(root) for f in files]


@pytest.mark.parametrize("name", ["metabo.point", "metabo.chunked"])
def test_a_run_is_at_most_100_files(exported, tmp_path, name) -> None:
    """Zarr chunks asked for of one point: they grow until the run fits in 100 files (a
    folder), and a single-file run is one file."""
    archive = exported.archives[name]
    (result,) = to_zarr([archive], tmp_path / "tiny.zarr", cluster=INLINE, chunk_points=1)
    files = _files(tmp_path / "tiny.zarr" / name)
    assert 30 < len(files) <= 100 and result.zarr_chunks > 10
    assert result.chunks > 5 * result.zarr_chunks
    to_zarr([archive], tmp_path / "single", cluster=INLINE, chunk_points=1, single_file=True)
    assert _files(tmp_path / "single") == [str(tmp_path / "single" / f"{name}.zarr.zip")]
    for store in (tmp_path / "tiny.zarr" / name, tmp_path / "single" / f"{name}.zarr.zip"):
        group = zarr.open_group(
            zarr.storage.ZipStore(store, mode="r") if store.suffix == ".zip" else str(store),
            mode="r",
        )
        want = zarr.open_group(str(exported.store / name), mode="r")
        for key in group.attrs["arrays"]:
            assert _same(group[key][:], want[key][:]), (store, key)


def test_failed_run_leaves_nothing(exported, tmp_path) -> None:
    bogus = tmp_path / "bogus.mzpeak"
    bogus.write_text("not an archive")
    store = tmp_path / "f.zarr"
    with pytest.raises(ArchiveError, match="bogus.mzpeak"):
        to_zarr([exported.archives["three.chunked"], bogus], store, cluster=INLINE)
    assert not (store / "bogus").exists()
    assert not [p for p in store.iterdir() if p.name.startswith(".")]


def test_bad_arguments(exported, tmp_path) -> None:
    a = exported.archives["three.chunked"]
    twin = tmp_path / "x" / a.name
    twin.parent.mkdir()
    twin.write_bytes(a.read_bytes())
    with pytest.raises(OptionsError, match="same group"):
        to_zarr([a, twin], tmp_path / "s.zarr", cluster=INLINE)
    with pytest.raises(InputError, match="no such archive"):
        to_zarr([tmp_path / "missing.mzpeak"], tmp_path / "s.zarr", cluster=INLINE)
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "file.txt").write_text("x")
    with pytest.raises(OutputError, match="not a Zarr store"):
        to_zarr([a], tmp_path / "plain", cluster=INLINE)
    with pytest.raises(OptionsError, match="chunk_width"):
        to_zarr([a], tmp_path / "s.zarr", cluster=INLINE, chunk_width=0)
