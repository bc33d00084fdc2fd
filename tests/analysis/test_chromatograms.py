"""XIC, TIC and base-peak chromatograms from archives, from the Zarr export and from the
source mzML read with pyteomics (an independent reader) agree; pruning reads only what it must."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pytest
from pyteomics import mzml

from mzpeak_dask import InputError, cli, open_archive
from mzpeak_dask.analysis import ArchiveRun, ZarrRun, archive_run, base_peak, open_runs, tic, xic
from mzpeak_dask.analysis.archive_run import raw_spectrum
from mzpeak_dask.analysis.kernels import overlapping, ppm_windows
from mzpeak_dask.errors import ZarrStoreError
from mzpeak_dask.zarr_runs import CHUNK_TABLES
from mzpeak_dask.zarr_runs.frames import READ

from ..export.builds import METABO, SMALL, SOURCES

pytestmark = pytest.mark.slow  # the shared archives and their export are built first

PPM = 10.0


@lru_cache(maxsize=4)
def source_spectra(path: Path) -> tuple[tuple, ...]:
    """(time in minutes, MS level, m/z, intensity) of every spectrum, read by pyteomics."""
    out = []
    with mzml.MzML(str(path)) as reader:
        for s in reader:
            scan = s["scanList"]["scan"][0]["scan start time"]
            minutes = float(scan) / {"minute": 1.0, "second": 60.0}[scan.unit_info]
            mz = s["m/z array"].astype(np.float64)
            out.append((minutes, s["ms level"], mz, s["intensity array"].astype(np.float64)))
    return tuple(out)


def oracle_xic(path: Path, targets: np.ndarray, rt: tuple | None, level: int | None):
    rows, index = [], []
    for k, (time, ms_level, mz, intensity) in enumerate(source_spectra(path)):
        if (level is not None and ms_level != level) or (rt and not rt[0] <= time <= rt[1]):
            continue
        tolerance = targets * PPM * 1e-6
        windows = zip(targets - tolerance, targets + tolerance, strict=True)
        rows.append([intensity[(mz >= a) & (mz <= b)].sum() for a, b in windows])
        index.append(k)
    return np.array(index), np.array(rows)


def targets_of(path: Path) -> np.ndarray:
    """Distinct strong peaks of several MS1 spectra, a peak of an MS2 spectrum and an
    m/z without signal."""
    spectra = source_spectra(path)
    picks: list[float] = []
    for _, _, mz, intensity in [s for s in spectra if s[1] == 1][::3]:
        for m in mz[np.argsort(intensity)[::-1][:50]]:
            if all(abs(m - p) > 1.0 for p in picks):
                picks.append(float(m))
                break
    ms2 = [s for s in spectra if s[1] == 2]
    if ms2:
        picks.append(float(ms2[0][2][np.argmax(ms2[0][3])]))
    return np.array([*picks[:9], 1234.5678])


def runs_of(exported, source: Path) -> list:
    names = sorted(name for name, src in SOURCES.items() if src == source)
    archives = [ArchiveRun(exported.archives[name]) for name in names]
    return archives + [ZarrRun(exported.store / name) for name in names]


@pytest.mark.parametrize(
    ("source", "rt", "level"),
    [(SMALL, (0.1, 0.4), 1), (SMALL, None, None), (METABO, (3.8, 4.5), 1)],
    ids=["small-ms1-rt", "small-all", "metabo-ms1-rt"],
)
def test_xic_agrees_with_pyteomics(exported, source, rt, level) -> None:
    targets = targets_of(source)
    index, want = oracle_xic(source, targets, rt, level)
    assert want.sum() > 0 and len(index) > 2
    runs = runs_of(exported, source)
    results = xic(runs, targets, ppm=PPM, rt=rt, ms_level=level)
    names = [run.name for run in runs]
    assert list(results) == [f"{n}#2" if names.index(n) < k else n for k, n in enumerate(names)]
    first = None
    for name, frame in results.items():
        assert list(frame.columns) == ["time", *targets.tolist()], name
        assert frame.index.tolist() == index.tolist(), name
        got = frame[targets.tolist()].to_numpy()
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=0, err_msg=name)
        times = [source_spectra(source)[k][0] for k in index]
        np.testing.assert_allclose(frame["time"], times, rtol=1e-6)
        first = got if first is None else first
        assert np.array_equal(got, first), name  # archives and Zarr: the same sums exactly


@pytest.mark.parametrize("source", [SMALL, METABO], ids=["small", "metabo"])
def test_archive_xic_read_row_group_by_row_group(exported, source, monkeypatch) -> None:
    """Blocks of a big run read their row groups in pieces: read one row group at a time,
    point, chunked and peaks archives (spectra split over row groups in metabo.point) still
    give pyteomics' sums, on one thread and on several."""
    targets = targets_of(source)
    index, want = oracle_xic(source, targets, None, None)
    names = sorted(name for name, src in SOURCES.items() if src == source)
    runs = [ArchiveRun(exported.archives[name]) for name in names]
    monkeypatch.setattr(archive_run, "PIECE_BYTES", 1)
    archive = open_archive(exported.archives[names[-1]])
    ids = np.arange(len(archive))
    assert len(archive_run.pieces(archive.signal("spectrum"), ids)) > 1
    for scheduler in ("sync", "threads"):
        with dask.config.set(scheduler=scheduler):
            results = xic(runs, targets, ppm=PPM, ms_level=None)
        for name, frame in results.items():
            assert frame.index.tolist() == index.tolist(), name
            got = frame[targets.tolist()].to_numpy()
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=0, err_msg=name)


def test_tic_and_base_peak_agree_with_pyteomics(exported) -> None:
    runs = runs_of(exported, SMALL)
    ms1 = [(k, s) for k, s in enumerate(source_spectra(SMALL)) if s[1] == 1]
    tics, peaks = tic(runs), base_peak(runs)
    assert list(tics) == list(peaks) and len(tics) == len(runs)
    for name in tics:
        frame, peak = tics[name], peaks[name]
        assert frame.index.tolist() == [k for k, _ in ms1]
        np.testing.assert_allclose(frame["tic"], [s[3].sum() for _, s in ms1], rtol=1e-9)
        want_intensity = [s[3].max() for _, s in ms1]
        want_mz = [s[2][np.argmax(s[3])] for _, s in ms1]
        assert np.array_equal(peak["base_peak_intensity"], want_intensity), name
        assert np.array_equal(peak["base_peak_mz"], want_mz), name


def _garble_frames(group: Path, run: ZarrRun, name: str, chunks: np.ndarray) -> None:
    """Overwrite the frames of mzPeak chunks ``chunks`` of array ``name`` with garbage of the
    same size (the objects keep their sizes)."""
    frames = run.frames(name)
    for c in chunks.tolist():
        path = group / name / "c" / str(int(frames.zarr_chunk[c]))
        with open(path, "r+b") as f:
            f.seek(int(frames.byte_start[c]))
            f.write(b"\xff" * int(frames.frame_bytes[c]))


def test_zarr_xic_reads_only_chunks_that_can_hold_targets(exported, tmp_path) -> None:
    """Every frame a pruned XIC must not need is replaced by garbage: the XIC is still
    right, while a TIC (which needs them all) fails."""
    group = tmp_path / "small.chunked"
    shutil.copytree(exported.store / "small.chunked", group)
    run = ZarrRun(group)
    assert len(run.zarr_lengths) > 5  # the frames of several Zarr chunks
    targets, rt = targets_of(SMALL), (0.1, 0.4)
    low, high = ppm_windows(targets, PPM)
    spectra = run.spectra
    wanted = spectra.index[(spectra.ms_level == 1) & spectra.time.between(*rt)].to_numpy()
    table = run.chunk_table()
    needed = np.isin(table.spectrum, wanted) & overlapping(
        table.chunk_start, table.chunk_end, low, high
    )
    assert 0 < needed.sum() < 0.2 * len(needed)
    for name in ("mz", "intensity"):
        _garble_frames(group, run, name, np.flatnonzero(~needed))
    got = xic([run], targets, ppm=PPM, rt=rt)[run.name]
    want = xic([ZarrRun(exported.store / "small.chunked")], targets, ppm=PPM, rt=rt)
    pd.testing.assert_frame_equal(got, want["small.chunked"])
    with pytest.raises(ZarrStoreError, match="damaged"):
        tic([run])


def test_zarr_queries_read_only_the_chunk_tables_of_their_zarr_chunks(
    exported, tmp_path, capsys
) -> None:
    """The per-mzPeak-chunk tables of the last Zarr chunk with MS1 spectra are garbage (every
    table, objects of the same size): opening the run and an XIC over the spectra of the
    first Zarr chunk still answer, as on the intact run; a TIC, and an XIC over the whole
    run, which need that Zarr chunk, fail: the command is one error line naming the store
    and the Zarr chunk."""
    group = tmp_path / "small.chunked"
    shutil.copytree(exported.store / "small.chunked", group)
    run = ZarrRun(group)
    last = int(run.spectrum_zarr_chunk[run.spectra.ms_level.to_numpy() == 1].max())
    assert last > 2
    for k, name in enumerate(CHUNK_TABLES):
        assert len(list((group / name / "c").iterdir())) == 1  # one object per table
        with open(group / name / "c" / "0", "r+b") as f:
            f.seek(int(run.table_bytes[k, :last].sum()))
            f.write(b"\xff" * int(run.table_bytes[k, last]))
    run = ZarrRun(group)
    first = run.spectra[run.spectrum_zarr_chunk == 0]
    rt = (float(first.time.min()), float(first.time.max()))
    assert (run.spectra.time > rt[1]).sum() > len(first)  # the query leaves most spectra out
    targets = targets_of(SMALL)
    got = xic([run], targets, ppm=PPM, rt=rt)[run.name]
    want = xic([ZarrRun(exported.store / "small.chunked")], targets, ppm=PPM, rt=rt)
    pd.testing.assert_frame_equal(got, want["small.chunked"])
    assert len(got) and (got.to_numpy() > 0).any()
    late = (1e6, 2e6)  # no spectra: no Zarr chunk read
    none = xic([run], targets, ppm=PPM, rt=late)[run.name]
    want = xic([ZarrRun(exported.store / "small.chunked")], targets, ppm=PPM, rt=late)
    pd.testing.assert_frame_equal(none, want["small.chunked"])
    assert len(none) == 0
    with pytest.raises(ZarrStoreError, match=f"Zarr chunk {last}"):
        tic([run])
    assert cli.main(["xic", str(group), "--mz", f"{targets[0]:.6f}"]) != 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert str(group) in lines[0] and f"Zarr chunk {last}" in lines[0], lines[0]


def test_narrow_zarr_xic_reads_a_small_part_of_the_store(exported) -> None:
    """Bytes of chunk objects read for one target, against the signal arrays' size."""
    store = exported.store / "small.chunked"
    run = ZarrRun(store)
    signal = sum(
        p.stat().st_size for name in ("mz", "intensity") for p in (store / name).rglob("c/*")
    )
    table = run.chunk_table()
    target = float(table.chunk_start[np.argmax(table.lengths)])
    before = READ.bytes
    with dask.config.set(scheduler="sync"):
        frame = xic([run], [target], ppm=PPM)[run.name]
    read = READ.bytes - before
    assert (frame[target] > 0).any()
    assert 0 < read < 0.25 * signal, (read, signal)


def test_chunked_archive_decodes_only_overlapping_rows(exported) -> None:
    targets = targets_of(SMALL)
    windows = ppm_windows(targets, PPM)
    source = exported.archives["ref.chunked"]
    full_mz, full_intensity = raw_spectrum(source, 0)
    mz, intensity = raw_spectrum(source, 0, windows)
    assert len(mz) < len(full_mz) / 4
    inside = overlapping(full_mz, full_mz, *windows)
    assert inside.any()
    assert np.isin(full_mz[inside], mz).all()
    assert np.array_equal(
        np.sort(full_intensity[inside]), np.sort(intensity[overlapping(mz, mz, *windows)])
    )


def test_lazy_views(exported) -> None:
    zrun = ZarrRun(exported.store / "ref.chunked")
    arun = ArchiveRun(exported.archives["ref.chunked"])
    lazy = zrun.array("mz")
    assert lazy.chunks == (tuple(zrun.zarr_lengths.tolist()),) and len(lazy.chunks[0]) > 5
    assert np.array_equal(lazy[1000:5000].compute(), zrun.array("mz").compute()[1000:5000])
    chunks = np.array([5, 6, 7, 40, 41, 900])
    selected = zrun.selection("mz", chunks)
    table = zrun.chunk_table()
    assert selected.chunks == (tuple(table.lengths[chunks].tolist()),)
    whole = zrun.array("mz").compute()
    want = np.concatenate(
        [whole[table.starts[c] : table.starts[c] + table.lengths[c]] for c in chunks]
    )
    assert np.array_equal(selected.compute(), want)
    assert np.array_equal(selected[17:-9].compute(), want[17:-9])  # cuts inside chunks
    ids = np.array([3, 4, 7])
    with open_archive(exported.archives["ref.chunked"]) as archive:
        want = np.concatenate([archive[int(i)].mz for i in ids])
    for run in (zrun, arun):
        frame = run.points(ids).compute()
        assert np.array_equal(frame["mz"].to_numpy(), want), run
        assert frame["spectrum_index"].unique().tolist() == ids.tolist()


def test_open_runs(exported, tmp_path) -> None:
    runs = open_runs([exported.store, exported.archives["three.chunked"]])
    names = [run.name for run in runs]
    assert names[-1] == "three.chunked#2" and "three.chunked" in names
    assert len(runs) == len(exported.archives) + 1
    single = open_runs(exported.store / "maldi.point")
    assert [type(r) for r in single] == [ZarrRun] and len(single[0].spectra) == 1
    with pytest.raises(InputError, match="no such"):
        open_runs(tmp_path / "missing.zarr")
    empty = tmp_path / "empty.zarr"
    empty.mkdir()
    (empty / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    with pytest.raises(InputError, match="without exported runs"):
        open_runs(empty)


@pytest.mark.cluster
def test_a_default_client_with_no_cluster_left_is_not_waited_on(exported) -> None:
    """Without ``client=``, the analysis computes on Dask's threads (or the scheduler Dask's
    configuration names), never on a distributed client left as the process' default: one
    with no worker left would be waited on for ever."""
    from distributed import Client, LocalCluster

    name = min(name for name, source in SOURCES.items() if source == METABO)
    archive = exported.archives[name]
    expected = xic([archive], [268.1041], ppm=10)
    # the process' default client from here on, with no worker to run anything (as one
    # whose workers died)
    with LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cluster:
        pool = ThreadPoolExecutor(1)  # a wait for ever fails the test in 120 s
        try:
            with Client(cluster):
                got = pool.submit(xic, [archive], [268.1041], ppm=10).result(timeout=120)
        finally:
            pool.shutdown(wait=False)
    assert list(got) == list(expected)
    for run in expected:
        pd.testing.assert_frame_equal(got[run], expected[run])
