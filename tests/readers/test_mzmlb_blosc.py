"""mzMLb whose signal datasets use the Blosc HDF5 filter (32001, not built into HDF5): the
converter registers hdf5plugin's filters before h5py reads a dataset, in the command's process
and in every Dask worker. Without that, reading the arrays failed with ``OSError: Can't
synchronously read data (can't open directory ...plugin)``.

Conversions run as the command line in a fresh process: this test process imports hdf5plugin
to write the input, which would hide a missing import."""

from __future__ import annotations

from pathlib import Path

import h5py
import hdf5plugin
import numpy as np
import pytest

from mzpeak_dask import open_archive

from ..conftest import DATA
from ..helpers.cli import run_cli

SOURCE = DATA / "mzdata" / "small.mzMLb"  # 48 spectra, 1 chromatogram, gzip datasets


def blosc_copy(source: Path, target: Path) -> Path:
    """``source`` with every signal dataset rewritten with Blosc compression (the mzML
    document and its offset indexes keep their gzip)."""
    with h5py.File(source, "r") as old, h5py.File(target, "w") as new:
        for key, value in old.attrs.items():
            new.attrs[key] = value
        for name, dataset in old.items():
            signal = name.startswith(("spectrum_", "chromatogram_"))
            chunks = (max(1, min(len(dataset), 65536)),)
            compression = (
                hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=1)
                if signal
                else {"compression": "gzip"}
            )
            copy = new.create_dataset(name, data=dataset[:], chunks=chunks, **compression)
            for key, value in dataset.attrs.items():
                copy.attrs[key] = value
    with h5py.File(target, "r") as check:
        filters = check["spectrum_MS_1000514_double"]._filters
        assert str(hdf5plugin.BLOSC_ID) in filters, filters
    return target


def _arrays(path: Path) -> list[dict[str, np.ndarray]]:
    with open_archive(path) as archive:
        spectra = [dict(archive[i].arrays) for i in range(len(archive))]
        spectra += [
            dict(archive.read_chromatogram(i).arrays) for i in range(archive.chromatogram_count)
        ]
    return spectra


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    folder = tmp_path_factory.mktemp("blosc")
    blosc = blosc_copy(SOURCE, folder / "small.blosc.mzMLb")
    plain = folder / "plain.mzpeak"
    result = run_cli("convert", "--cluster", "inline", "-q", str(SOURCE), str(plain))
    assert result.returncode == 0, result.stderr
    arrays = _arrays(plain)
    assert len(arrays) == 49 and sum(len(a["m/z array"]) for a in arrays[:48]) > 200_000
    return blosc, arrays


def _assert_same(archive: Path, expected: list[dict[str, np.ndarray]]) -> None:
    got = _arrays(archive)
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        assert a.keys() == b.keys()
        for name in a:
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.mark.slow  # two conversions in fresh processes (the reference's and its own)
def test_blosc_mzmlb_converts_inline(reference: tuple[Path, list], tmp_path: Path) -> None:
    blosc, expected = reference
    out = tmp_path / "blosc.mzpeak"
    result = run_cli("convert", "--cluster", "inline", "-q", str(blosc), str(out))
    assert result.returncode == 0, result.stderr
    _assert_same(out, expected)


@pytest.mark.cluster
@pytest.mark.slow
def test_blosc_mzmlb_converts_on_two_workers(reference: tuple[Path, list], tmp_path: Path) -> None:
    blosc, expected = reference
    out = tmp_path / "blosc.mzpeak"
    result = run_cli(
        "convert", "--workers", "2", "--partition-items", "8", "-q", str(blosc), str(out)
    )
    assert result.returncode == 0, result.stderr
    _assert_same(out, expected)
