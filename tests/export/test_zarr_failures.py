"""Exports that fail or are interrupted part way, after workers have written chunks: no run
group or file appears, no staging, hidden folder or temporary ZIP stays; an older run that was
to be replaced is left as it was."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mzpeak_dask import ArchiveError, ConvertOptions, convert
from mzpeak_dask.errors import MzPeakDaskError
from mzpeak_dask.export.zarr import to_zarr

from ..conftest import INLINE
from .builds import METABO

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory) -> Path:
    """A real run as an unpacked point archive (its members are plain files)."""
    path = tmp_path_factory.mktemp("failures") / "metabo.mzpeak"
    options = ConvertOptions(layout="point", row_group_points=4096, unpacked=True)
    convert(METABO, path, options, cluster=INLINE)
    return path


def damaged_copy(unpacked: Path, out: Path) -> Path:
    """A copy whose signal member has zeros in its second half, footer kept: its survey
    passes, the write tasks of its later spectra fail."""
    shutil.copytree(unpacked, out)
    data = out / "spectra_data.parquet"
    raw = bytearray(data.read_bytes())
    footer = int.from_bytes(raw[-8:-4], "little") + 8
    middle = len(raw) // 2
    raw[middle : len(raw) - footer - 64] = bytes(len(raw) - footer - 64 - middle)
    data.write_bytes(bytes(raw))
    return out


def leftovers(folder: Path) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(d, f), folder)
        for d, dirs, files in os.walk(folder)
        for f in files + dirs
    )


@pytest.mark.parametrize("single_file", [False, True], ids=["folder", "single-file"])
def test_failing_write_tasks_leave_nothing(unpacked, tmp_path, single_file) -> None:
    archive = damaged_copy(unpacked, tmp_path / "run.mzpeak")
    store = tmp_path / "out"
    with pytest.raises(ArchiveError, match="run.mzpeak"):
        to_zarr([archive], store, cluster=INLINE, chunk_points=2000, single_file=single_file)
    expected = ["zarr.json"] if not single_file else []  # the store's own group
    assert leftovers(store) == expected


def test_failed_overwrite_keeps_the_older_run(unpacked, tmp_path) -> None:
    store = tmp_path / "out"
    (first,) = to_zarr([unpacked], store, cluster=INLINE, chunk_points=2000)
    before = {p: (store / p).read_bytes() for p in leftovers(store) if (store / p).is_file()}
    archive = damaged_copy(unpacked, tmp_path / "other" / unpacked.name)
    with pytest.raises(MzPeakDaskError):
        to_zarr([archive], store, cluster=INLINE, chunk_points=2000, overwrite=True)
    after = {p: (store / p).read_bytes() for p in leftovers(store) if (store / p).is_file()}
    assert after == before and first.zarr_chunks > 3


@pytest.mark.parametrize("single_file", [False, True], ids=["folder", "single-file"])
def test_interrupted_export_leaves_nothing(unpacked, tmp_path, single_file) -> None:
    """Ctrl-C (SIGINT) once chunk objects are written: the command stops, non-zero, and
    removes them."""
    store = tmp_path / "out"
    argv = [sys.executable, "-m", "mzpeak_dask", "export-zarr", str(unpacked), str(store)]
    argv += ["--cluster", "inline", "--zarr-chunk-points", "200"]
    argv += ["--single-file"] if single_file else []
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    try:
        while not any(
            name.startswith(("mz.", "mz/c/")) or "/mz." in name for name in _names(store)
        ):
            if proc.poll() is not None:
                pytest.fail(f"the export ended before any chunk was seen: {proc.returncode}")
            if time.monotonic() > deadline:
                pytest.fail("no chunk object written within 120 s")
            time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0, err
    expected = ["zarr.json"] if not single_file else []
    assert leftovers(store) == expected


def _names(store: Path) -> list[str]:
    return leftovers(store) if store.exists() else []
