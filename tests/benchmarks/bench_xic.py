"""XIC benchmark: 20 targets over 10 runs, from mzPeak archives and from their Zarr export,
against the same XICs computed by reading the mzML files with pyteomics; plus the Zarr export
throughput on a 2-worker LocalCluster.

    python -m tests.benchmarks.bench_xic [--runs 10] [--copies 5] [--targets 20]

Inputs are synthetic by replication: mzdata/small.mzML (14 profile MS1 + 34 centroid MS2)
replicated ``--copies`` times into one run, converted once, and that run copied ``--runs``
times (mzML, chunked archive, point archive). Every XIC is MS1 over the whole RT range,
10 ppm, for two target sets: spread over the whole m/z axis (the hard case for chunk pruning)
and within 100 m/z (a targeted panel). The mzML baseline parses every spectrum with pyteomics
and sums with the same kernel. Times are the median of 3 (warm page cache; the baseline runs
once); cluster start-up is not timed.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import dask
import numpy as np
from pyteomics import mzml

from mzpeak_dask import ClusterOptions, ConvertOptions, convert
from mzpeak_dask.analysis import open_runs, xic
from mzpeak_dask.analysis.kernels import ppm_windows, window_sums
from mzpeak_dask.export.zarr import to_zarr
from mzpeak_dask.parallel.cluster import cluster_client

from .common import DATA, machine, replicated, workdir

PPM = 10.0
INLINE = ClusterOptions(cluster="inline")


def median_time(fn, repeat: int = 3) -> tuple[float, object]:
    samples, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), value


def prepare(root: Path, runs: int, copies: int) -> dict[str, list[Path]]:
    """``runs`` copies of one replicated run as mzML, chunked and point archives."""
    source = replicated(DATA / "mzdata" / "small.mzML", copies)
    files: dict[str, list[Path]] = {"mzML": [], "chunked": [], "point": []}
    for layout in ("chunked", "point"):
        first = root / f"first.{layout}.mzpeak"
        if not first.exists():
            convert(source, first, ConvertOptions(layout=layout), cluster=INLINE)
    for k in range(runs):
        for kind, original in (
            ("mzML", source),
            ("chunked", root / "first.chunked.mzpeak"),
            ("point", root / "first.point.mzpeak"),
        ):
            suffix = ".mzML" if kind == "mzML" else f".{kind}.mzpeak"
            target = root / f"run{k:02d}{suffix}"
            if not target.exists():
                shutil.copyfile(original, target)
            files[kind].append(target)
    return files


def ms1_points(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with mzml.MzML(str(path), use_index=False) as reader:
        ms1 = [s for s in reader if s["ms level"] == 1]
    mz = np.concatenate([s["m/z array"] for s in ms1])
    return mz, np.concatenate([s["intensity array"] for s in ms1])


def spread_targets(path: Path, count: int) -> np.ndarray:
    """The strongest MS1 peak in each of ``count`` equal m/z bins spanning the MS1 range:
    targets over the whole axis, the hard case for chunk pruning."""
    mz, intensity = ms1_points(path)
    edges = np.linspace(mz.min(), mz.max(), count + 1)
    bins = np.clip(np.searchsorted(edges, mz, side="right") - 1, 0, count - 1)
    order = np.lexsort((-intensity, bins))
    first = np.unique(bins[order], return_index=True)[1]
    return np.sort(mz[order][first])


def clustered_targets(path: Path, count: int, span: float = 100.0) -> np.ndarray:
    """The ``count`` strongest MS1 peaks (at least 0.5 m/z apart) within ``span`` m/z of the
    base peak: a targeted panel in one region of the axis."""
    mz, intensity = ms1_points(path)
    centre = mz[np.argmax(intensity)]
    near = np.flatnonzero(np.abs(mz - centre) <= span / 2)
    picks: list[float] = []
    for m in mz[near[np.argsort(intensity[near])[::-1]]]:
        if all(abs(m - p) >= 0.5 for p in picks):
            picks.append(float(m))
        if len(picks) == count:
            break
    return np.sort(picks)


def mzml_xic(files: list[Path], targets: np.ndarray) -> list[np.ndarray]:
    """The baseline: pyteomics reads every spectrum; MS1 spectra go through the same kernel."""
    low, high = ppm_windows(targets, PPM)
    out = []
    for path in files:
        rows = []
        with mzml.MzML(str(path), use_index=False) as reader:
            for s in reader:
                if s["ms level"] != 1:
                    continue
                mz, intensity = s["m/z array"], s["intensity array"]
                segment = np.zeros(len(mz), np.int64)
                rows.append(window_sums(mz, intensity, segment, 1, low, high)[0])
        out.append(np.array(rows))
    return out


def export(files: list[Path], store: Path, client) -> tuple[float, int, int, int]:
    shutil.rmtree(store, ignore_errors=True)
    start = time.perf_counter()
    results = to_zarr(files, store, client=client)
    seconds = time.perf_counter() - start
    spectra = sum(r.spectra for r in results)
    return seconds, spectra, sum(r.chunks for r in results), sum(r.source_bytes for r in results)


def _mzml_one(path: Path, targets: np.ndarray) -> np.ndarray:
    return mzml_xic([path], targets)[0]


def mzml_xic_parallel(files: list[Path], targets: np.ndarray, pool) -> list[np.ndarray]:
    """The same baseline with one run per process, two processes at a time."""
    return list(pool.map(partial(_mzml_one, targets=targets), files))


def compare(label: str, bases: tuple[float, float], fn, want, targets: np.ndarray) -> None:
    seconds, got = median_time(fn)
    agree = all(
        np.allclose(frame[targets.tolist()].to_numpy(), w, rtol=1e-9, atol=0)
        for frame, w in zip(got.values(), want, strict=True)
    )
    print(
        f"  {label:44}: {seconds:6.2f} s  {bases[0] / seconds:5.1f}x  {bases[1] / seconds:5.1f}x"
        f"   agrees: {'yes' if agree else 'NO'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--copies", type=int, default=5)
    parser.add_argument("--targets", type=int, default=20)
    args = parser.parse_args()
    root = workdir() / "xic"
    root.mkdir(exist_ok=True)
    print(f"machine: {machine()}")
    files = prepare(root, args.runs, args.copies)
    print(
        f"runs: {args.runs} copies of small.mzML x{args.copies} (synthetic by replication: "
        f"{args.copies * 48} spectra, {args.copies * 14} of them MS1 profile; per run "
        f"{files['mzML'][0].stat().st_size / 1e6:.1f} MB mzML, "
        f"{files['chunked'][0].stat().st_size / 1e6:.1f} MB chunked archive, "
        f"{files['point'][0].stat().st_size / 1e6:.1f} MB point archive)"
    )
    store = root / "runs.zarr"
    with (
        cluster_client(ClusterOptions(workers=2, dashboard=False)) as client,
        ProcessPoolExecutor(2) as pool,
    ):
        client.run(lambda: __import__("mzpeak_dask.analysis") and None)  # warm the workers
        seconds, spectra, chunks, size = export(files["chunked"], store, client)
        print(
            f"export-zarr of the chunked archives (2-worker LocalCluster): {seconds:.1f} s, "
            f"{size / 1e6 / seconds:.2f} MB/s of archive, {spectra / seconds:,.0f} spectra/s, "
            f"{chunks / seconds:,.0f} mzPeak chunks/s ({chunks:,} mzPeak chunks of {spectra:,} "
            "spectra, one frame each in Zarr chunks of whole spectra)"
        )
        for kind, targets in (
            ("spread over the m/z axis", spread_targets(files["mzML"][0], args.targets)),
            ("within 100 m/z", clustered_targets(files["mzML"][0], args.targets)),
        ):
            print(
                f"XIC, {len(targets)} targets {kind} ({targets[0]:.4f} to {targets[-1]:.4f}), "
                f"±{PPM:g} ppm, MS1, whole RT range, {args.runs} runs:"
            )
            base, want = median_time(lambda t=targets: mzml_xic(files["mzML"], t), repeat=1)
            base2, _ = median_time(lambda t=targets: mzml_xic_parallel(files["mzML"], t, pool), 1)
            print(f"  {'mzML read with pyteomics, 1 process':44}: {base:6.2f} s")
            print(f"  {'mzML read with pyteomics, 2 processes':44}: {base2:6.2f} s")
            print(f"  {'':44}            vs 1 proc  vs 2 procs (goal >= 10x)")
            for label, paths, scheduler in (
                ("point archives, 1 thread", files["point"], "sync"),
                ("point archives, 2 threads", files["point"], None),
                ("point archives, 2-worker LocalCluster", files["point"], client),
                ("chunked archives, 1 thread", files["chunked"], "sync"),
                ("chunked archives, 2 threads", files["chunked"], None),
                ("chunked archives, 2-worker LocalCluster", files["chunked"], client),
                ("Zarr store, 1 thread", [store], "sync"),
                ("Zarr store, 2 threads", [store], None),
                ("Zarr store, 2-worker LocalCluster", [store], client),
            ):
                run = partial(xic_of, paths, targets, scheduler)
                compare(label, (base, base2), run, want, targets)


def xic_of(paths: list[Path], targets: np.ndarray, scheduler) -> dict:
    """Open the runs and compute their XICs: on a client, with one thread ("sync") or with
    Dask's threads (None)."""
    if isinstance(scheduler, str):
        with dask.config.set(scheduler=scheduler):
            return xic(open_runs(paths), targets, ppm=PPM)
    return xic(open_runs(paths), targets, ppm=PPM, client=scheduler)


if __name__ == "__main__":
    main()
