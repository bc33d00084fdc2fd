"""Direct chunk-object access (zarr_runs/chunks.py) against zarr-python itself: what zarr
writes we read, what we write zarr reads, and arrays we do not handle fall back to zarr."""

from __future__ import annotations

import json

import numpy as np
import pytest
import zarr

from mzpeak_dask.zarr_runs.chunks import ChunkFiles, grid_lengths
from mzpeak_dask.zarr_runs.store import ChunkAdapter, dask_array

RECTILINEAR = {"array.rectilinear_chunks": True}
LENGTHS = [100] * 9 + [50, 50, 7, 1, 300]  # zarr stores the repeats run-length encoded


def make(path, dtype="float64", compressors=None, serializer="auto", lengths=LENGTHS):
    with zarr.config.set(RECTILINEAR):
        array = zarr.create_array(
            str(path),
            shape=(sum(lengths),),
            dtype=dtype,
            chunks=(lengths,),
            compressors=compressors,
            serializer=serializer,
            fill_value=np.nan if np.dtype(dtype).kind == "f" else 7,
        )
        return array


def values(dtype="float64") -> np.ndarray:
    rng = np.random.default_rng(5)
    return (rng.random(sum(LENGTHS)) * 2000).astype(dtype)


@pytest.mark.parametrize(
    "compressors",
    [
        zarr.codecs.ZstdCodec(level=3),
        zarr.codecs.ZstdCodec(level=1, checksum=True),
        None,
    ],
    ids=["zstd", "zstd-checksum", "none"],
)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_reads_what_zarr_writes(tmp_path, compressors, dtype) -> None:
    array = make(tmp_path / "a", dtype, compressors)
    data = values(dtype)
    with zarr.config.set(RECTILINEAR):
        array[:] = data
    stored = json.loads((tmp_path / "a" / "zarr.json").read_text())["chunk_grid"]
    assert [100, 9] in stored["configuration"]["chunk_shapes"][0]  # RLE on disk
    files = ChunkFiles(tmp_path / "a")
    assert files.direct
    assert files.lengths.tolist() == LENGTHS
    for i in range(len(LENGTHS)):
        got = files.read(i)
        assert got.dtype == np.dtype(dtype)
        assert got.tobytes() == array.get_block_selection(i).tobytes()
    assert files.read_range(100, 1000).tobytes() == data[100:1000].tobytes()
    assert files.read_range(100, 1001) is None  # not on a chunk boundary


def test_zarr_reads_what_we_write(tmp_path) -> None:
    array = make(tmp_path / "a", compressors=zarr.codecs.ZstdCodec(level=3))
    data = values()
    files = ChunkFiles(tmp_path / "a")
    files.write(2, data[200:1000])  # chunks 2..10
    with zarr.config.set(RECTILINEAR):
        got = zarr.open_array(str(tmp_path / "a"), mode="r")[:]
    assert np.array_equal(got[200:1000], data[200:1000])
    assert np.isnan(got[:200]).all() and np.isnan(got[1000:]).all()  # never written: fill
    assert np.isnan(files.read(0)).all() and len(files.read(0)) == 100
    with pytest.raises(ValueError, match="inside chunk"):
        files.write(0, data[:150])
    assert array.nchunks == len(LENGTHS)


def test_big_endian_bytes_codec(tmp_path) -> None:
    make(tmp_path / "a", serializer=zarr.codecs.BytesCodec(endian="big"))
    data = values()
    with zarr.config.set(RECTILINEAR):
        zarr.open_array(str(tmp_path / "a"), mode="r+")[:] = data
    files = ChunkFiles(tmp_path / "a")
    assert files.direct and files.read_range(0, len(data)).tobytes() == data.tobytes()


def test_other_codecs_fall_back_to_zarr(tmp_path) -> None:
    make(tmp_path / "a", compressors=zarr.codecs.GzipCodec())
    data = values()
    with zarr.config.set(RECTILINEAR):
        zarr.open_array(str(tmp_path / "a"), mode="r+")[:] = data
    assert not ChunkFiles(tmp_path / "a").direct
    adapter = ChunkAdapter(tmp_path / "a", data.shape, data.dtype)
    lazy = dask_array(adapter, LENGTHS)
    assert np.array_equal(lazy.compute(), data)  # read through zarr
    starts, lengths = np.array([0, 900]), np.array([100, 50])
    assert np.array_equal(adapter.read_points(starts, lengths), np.r_[data[:100], data[900:950]])


def test_grid_lengths() -> None:
    regular = {
        "shape": [250],
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [100]}},
    }
    assert grid_lengths(regular).tolist() == [100, 100, 100]
    rle = {
        "shape": [307],
        "chunk_grid": {
            "name": "rectilinear",
            "configuration": {"kind": "inline", "chunk_shapes": [[[100, 3], 7]]},
        },
    }
    assert grid_lengths(rle).tolist() == [100, 100, 100, 7]
    other = {"shape": [1], "chunk_grid": {"name": "rectangular", "configuration": {}}}
    assert grid_lengths(other) is None


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_a_chunk_of_many_frames(tmp_path, compression) -> None:
    """A chunk object made of one frame per mzPeak chunk (what the export writes), of values
    that do not compress and frames of 1 to 5 values: zarr and this reader read it whole, and
    its frames one by one."""
    from mzpeak_dask.export.writes import encode_frames
    from mzpeak_dask.zarr_runs.frames import over
    from mzpeak_dask.zarr_runs.store import create_point_array

    rng = np.random.default_rng(3)
    frames = rng.integers(1, 6, 400)
    values = rng.random(int(frames.sum())).astype(np.float32)
    with zarr.config.set(RECTILINEAR):
        group = zarr.open_group(str(tmp_path), mode="w")
        create_point_array(group, "a", values.dtype, [len(values)], compression)
    data, sizes = encode_frames(values, frames, compression)
    (tmp_path / "a" / "c").mkdir()
    (tmp_path / "a" / "c" / "0").write_bytes(data)
    files = ChunkFiles(tmp_path / "a")
    assert files.direct and files.read(0).tobytes() == values.tobytes()
    with zarr.config.set(RECTILINEAR):
        assert zarr.open_array(str(tmp_path / "a"), mode="r")[:].tobytes() == values.tobytes()
    offsets = np.concatenate(([0], np.cumsum(frames)))
    reader = over(files, offsets, sizes, "mzPeak chunk")
    ids = np.array([0, 1, 2, 17, 399])
    want = np.concatenate([values[offsets[i] : offsets[i + 1]] for i in ids])
    assert reader.read(ids).tobytes() == want.tobytes()
