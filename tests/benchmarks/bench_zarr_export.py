"""Zarr export of a big run against its conversion, and XICs from the archive and the stores.

    python -m tests.benchmarks.bench_zarr_export [--copies 300] [--source mzdata/small.mzML]

Inputs are synthetic by replication: a real run of ../shared/data (default mzdata/small.mzML,
14 profile MS1 + 34 centroid MS2 spectra, 3.4 MB) replicated ``--copies`` times into one
indexed mzML (300 copies: about 1 GB) with tests/replicate.py. On one 2-worker LocalCluster
(the benchmark's own), each step runs as the ``mzpeak-dask`` command in a fresh process
connected to it (``--scheduler``), so the figures are those of a user's command:

* ``convert`` (defaults), then ``export-zarr`` of the archive to a folder store and with
  ``--single-file``: wall time, export / conversion, the coordinator's peak RSS (the
  command's process, from ``wait4``), the peak disk use of the store folder while exporting
  (sampled every 0.1 s: staging, hidden files and the run) against the finished store, and
  the files of the run;
* ``xic`` of a narrow target (one m/z, 10 ppm, MS1, whole RT range) from the archive and from
  both stores (Dask threads in the command's process): wall time and peak RSS;
* the same XIC in this process on one thread (``scheduler="sync"``), with the bytes of chunk
  objects the reader fetched (:data:`mzpeak_dask.zarr_runs.frames.READ`) against the store's
  size, and a pyteomics loop on one thread over the source (timed on ``--pyteomics-copies``
  copies and scaled to the run: parsing 1 GB with pyteomics takes minutes).

Goals (issue 37): export <= 2x conversion, peak disk <= 1.5x the store, coordinator RSS
<= 500 MB, <= 100 files per run (1 with --single-file), xic <= 10 s and <= 500 MB RSS,
>= 10x the pyteomics loop, bytes read <= 25 % of the store for a narrow target.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import dask
import numpy as np
from pyteomics import mzml

from mzpeak_dask import ClusterOptions
from mzpeak_dask.analysis import open_runs, xic
from mzpeak_dask.parallel.cluster import cluster_client
from mzpeak_dask.zarr_runs.frames import READ

from .bench_xic import PPM, mzml_xic
from .common import DATA, ROOT, machine, replicated, workdir

MB = 1e6


def disk_use(folder: Path) -> int:
    """Bytes allocated under ``folder`` (files that vanish while it is walked are skipped)."""
    total = 0
    for parent, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(parent, name)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


class DiskPeak:
    """The peak of :func:`disk_use` of a folder, sampled in a thread."""

    def __init__(self, folder: Path):
        self.folder, self.peak, self._stop = folder, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, disk_use(self.folder))
            self._stop.wait(0.1)

    def __enter__(self) -> DiskPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, disk_use(self.folder))


def command(*argv: str, timeout: float = 3600) -> tuple[float, int, str]:
    """``mzpeak-dask ARGV`` in a fresh process: wall seconds, peak RSS in bytes (``wait4``)
    and its standard output; a failure stops the benchmark."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mzpeak_dask", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=env,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise SystemExit(f"mzpeak-dask {' '.join(argv)}: still running after {timeout} s") from None
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"mzpeak-dask {' '.join(argv)} failed:\n{err.decode()[-3000:]}")
    return seconds, _child_peak(), out.decode()


def _child_peak() -> int:
    """Peak RSS of the children reaped so far (the maximum over them: :func:`measured` runs
    each command from a helper process of its own)."""
    import resource

    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def measured(*argv: str) -> tuple[float, int, str]:
    """:func:`command` in a helper process of its own, so that its peak RSS is its alone."""
    helper = (
        "import sys, json\n"
        "from tests.benchmarks.bench_zarr_export import command\n"
        "seconds, peak, out = command(*sys.argv[1:])\n"
        "print(json.dumps([seconds, peak, out]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", helper, *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
        timeout=7200,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    import json

    seconds, peak, out = json.loads(done.stdout.strip().splitlines()[-1])
    return seconds, peak, out


def narrow_target(path: Path) -> float:
    """The base peak of the first MS1 spectrum of ``path``."""
    with mzml.MzML(str(path), use_index=False) as reader:
        for s in reader:
            if s["ms level"] == 1:
                return float(s["m/z array"][np.argmax(s["intensity array"])])
    raise SystemExit(f"{path}: no MS1 spectrum")


def in_process_xic(source: Path | str, target: float) -> tuple[float, int, float]:
    """Seconds, bytes of chunk objects read and the summed XIC, on one thread here."""
    before = READ.bytes
    start = time.perf_counter()
    with dask.config.set(scheduler="sync"):
        (frame,) = xic(open_runs([source]), [target], ppm=PPM).values()
    return time.perf_counter() - start, READ.bytes - before, float(frame[target].sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=300)
    parser.add_argument("--source", default="mzdata/small.mzML")
    parser.add_argument("--pyteomics-copies", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    root = workdir() / "zarr-export"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    source = DATA / args.source
    print(f"machine: {machine()} (shared with other sessions: times vary)")
    mzml_path = replicated(source, args.copies)
    print(
        f"run: {source.name} x{args.copies} (synthetic by replication): "
        f"{mzml_path.stat().st_size / MB:,.0f} MB mzML"
    )
    archive = root / "run.mzpeak"
    with cluster_client(ClusterOptions(workers=args.workers, dashboard=False)) as client:
        address = client.scheduler.address
        client.run(lambda: __import__("mzpeak_dask.export.zarr") and None)  # warm the workers
        convert_s, convert_rss, _ = measured(
            "convert", str(mzml_path), str(archive), "--scheduler", address, "-q"
        )
        print(
            f"convert ({args.workers} workers): {convert_s:.1f} s, archive "
            f"{archive.stat().st_size / MB:,.0f} MB, coordinator peak RSS {convert_rss / MB:.0f} MB"
        )
        stores = {}
        for label, extra in (("folder store", []), ("--single-file", ["--single-file"])):
            store = root / ("runs.zarr" if not extra else "single")
            with DiskPeak(root) as disk:
                base = disk_use(root)
                seconds, rss, out = measured(
                    "export-zarr", str(archive), str(store), "--scheduler", address, *extra
                )
            run = store / ("run" if not extra else "run.zarr.zip")
            size = disk_use(store)
            files = 1 if extra else sum(len(f) for _, _, f in os.walk(run))
            stores[label] = (run, size)
            print(
                f"export-zarr, {label}: {seconds:.1f} s = {seconds / convert_s:.2f}x the "
                f"conversion (goal <= 2); store {size / MB:,.0f} MB, peak disk "
                f"{(disk.peak - base) / MB:,.0f} MB = {(disk.peak - base) / size:.2f}x the "
                f"store (goal <= 1.5); coordinator peak RSS {rss / MB:.0f} MB (goal <= 500); "
                f"{files} files in the run (goal <= {1 if extra else 100})"
            )
            print(f"    {out.strip()}")
    target = narrow_target(mzml_path)
    print(f"xic --mz {target:.4f} --ppm {PPM:g} (MS1, whole RT range), the command (2 threads):")
    sources = {"archive": (archive, archive.stat().st_size), **stores}
    for label, (where, _) in sources.items():
        seconds, rss, _ = measured("xic", str(where), "--mz", f"{target:.6f}", "--json")
        print(
            f"  from the {label:14}: {seconds:5.1f} s (goal <= 10), peak RSS {rss / MB:.0f} MB "
            "(goal <= 500)"
        )
    sample = replicated(source, args.pyteomics_copies)
    start = time.perf_counter()
    # bench_xic's baseline: one row per MS1 spectrum, one column per target (here one)
    want = mzml_xic([sample], np.array([target]))[0]
    base = (time.perf_counter() - start) * args.copies / args.pyteomics_copies
    print(
        f"the same XIC on one thread in this process; pyteomics loop: {base:.1f} s "
        f"(timed on {args.pyteomics_copies} copies, scaled to {args.copies})"
    )
    expected = float(want.sum()) * args.copies / args.pyteomics_copies
    for label, (where, size) in sources.items():
        seconds, read, total = in_process_xic(where, target)
        agrees = np.isclose(total, expected, rtol=1e-6)
        shown = (
            ""
            if label == "archive"
            else (f", read {read / MB:,.1f} MB = {read / size:.1%} of the store (goal <= 25 %)")
        )
        print(
            f"  from the {label:14}: {seconds:5.1f} s = {base / seconds:5.1f}x pyteomics "
            f"(goal >= 10){shown}; sum agrees: {'yes' if agrees else 'NO'}"
        )


if __name__ == "__main__":
    main()
