"""Targeted quantification and ion maps against MINT (``ms-mint``, the ``bench`` extra) and
pyteomics + numpy.histogram2d, side by side in one run.

    python -m tests.benchmarks.bench_quantify [--targets 1000] [--runs 50] [--copies 30]
        [--pairs 1] [--latency 0.02] [--parts a,b,r,o,n,c,w]

* (a) the same numbers as MINT (``peak_area``, ``peak_max``, ``peak_n_datapoints``) on
  openms/FeatureFinderMetaboIdent_1_input.mzML, MS1, ``intensity_threshold`` 1: against MINT
  as it reads the mzML (m/z rounded to float32, intensities truncated to integers:
  ``ms_mint.io.set_dtypes``), and against MINT's integration (``process_ms1``) given the
  mzML's points as stored (float64, read by pyteomics), which must agree exactly;
* (b) ``--targets`` targets x ``--runs`` runs: the runs are copies of that same real run
  (replicated, said so), converted once (chunked layout); our quantify on one thread
  (``scheduler="sync"``) and on the package's LocalCluster of 2 workers of one thread
  (``cluster_client``), in turn ``--pairs`` times, wall and CPU seconds (this process, plus
  the workers' for the cluster), against MINT's per-file integration (``process_ms1_file``)
  on one file, times the number of runs; before each pair, two ceilings of 2 processes
  against one: plain numpy work, and this quantify split over two plain processes;
* (n) narrow targets: mzdata/small.mzML replicated ``--copies`` times over time (a long run,
  m/z 200 to 2000), converted in both layouts; 20 targets of 10 ppm and 6 s on strong peaks;
  the bytes an HTTP range server on loopback sent for quantify, and for the XIC of the same
  m/z over the targets' RT span, against the archive's size;
* (r) runs far away: the ``--runs`` copies of (b) on an HTTP range server on loopback that
  answers each request after ``--latency`` seconds (20 ms: a store in another building),
  quantified on the LocalCluster of 2 workers, in turn ``--pairs`` times: the runs opened by
  the caller one after another (as quantify opened them before, its runs given opened)
  against the URLs given to quantify (opened side by side on the workers), opening included,
  each round over its own server (its own URLs: no cache of a round serves the next);
* (o) the same runs far away without a client: opened by ``open_runs`` on Dask's threads in
  this process, one per core (Dask's default, set in its configuration) against the
  package's own count for opening, ``--pairs`` times in turn, each round over its own server;
* (c) the ion map at 1000 x 1000 bins of that replicated run, point layout, against pyteomics
  reading the mzML + numpy.histogram2d, with the peak memory (tracemalloc) of each;
* (w) the caller's memory over many runs: FeatureFinderMetaboIdent replicated 10 times (3,800
  spectra), 48 names of it; the peak memory (tracemalloc) of quantify on one thread over 12
  and 48 runs, holding every run at once (waves too large to cut) and in waves of 20,000
  spectra (about 5 runs; the default is two million).
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
import tracemalloc
from pathlib import Path

import dask
import numpy as np
import pandas as pd

from mzpeak_dask import ClusterOptions, ConvertOptions, convert
from mzpeak_dask.analysis import ion_map, quantify, xic

from .common import DATA, ROOT, machine, replicated, workdir

METABO = DATA / "openms" / "FeatureFinderMetaboIdent_1_input.mzML"
SMALL = DATA / "mzdata" / "small.mzML"


def archive(source: Path, layout: str, name: str) -> Path:
    out = workdir() / f"{name}.{layout}.mzpeak"
    if not out.exists():
        convert(source, out, ConvertOptions(layout=layout), cluster=ClusterOptions("inline"))
    return out


def mint_frame(path: Path) -> pd.DataFrame:
    from ms_mint.io import ms_file_to_df

    frame = ms_file_to_df(str(path))
    return frame[frame["ms_level"] == 1]


def targets_of(frame: pd.DataFrame, count: int, seed: int, rt_width: float) -> pd.DataFrame:
    """Targets on real peaks of the run (MINT's frame: seconds)."""
    rng = np.random.default_rng(seed)
    strong = frame[frame["intensity"] > frame["intensity"].quantile(0.9)]
    picks = strong.iloc[rng.choice(len(strong), count, replace=len(strong) < count)]
    centre = picks["scan_time"].to_numpy(np.float64) / 60 + rng.uniform(-0.1, 0.1, count)
    return pd.DataFrame(
        {
            "peak_label": [f"t{k}" for k in range(count)],
            "mz_mean": picks["mz"].to_numpy(np.float64),
            "mz_width": 10.0,
            "rt_min": centre - rt_width / 2,
            "rt_max": centre + rt_width / 2,
            "rt_unit": "min",
            "intensity_threshold": 1.0,
        }
    )


def mint_results(frame: pd.DataFrame, targets: pd.DataFrame) -> pd.DataFrame:
    from ms_mint.processing import process_ms1
    from ms_mint.targets import standardize_targets

    return process_ms1(frame, standardize_targets(targets.copy()))


def exact_frame(path: Path) -> pd.DataFrame:
    """The MS1 points of the mzML as stored (float64), in MINT's frame (seconds)."""
    from pyteomics import mzml

    frames = []
    with mzml.MzML(str(path), use_index=False) as reader:
        for s in reader:
            if s["ms level"] != 1:
                continue
            scan = s["scanList"]["scan"][0]["scan start time"]
            seconds = float(scan) * (60.0 if scan.unit_info == "minute" else 1.0)
            frames.append(
                pd.DataFrame(
                    {
                        "scan_time": seconds,
                        "mz": s["m/z array"].astype(np.float64),
                        "intensity": s["intensity array"].astype(np.float64),
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


def parity(targets: pd.DataFrame, frame: pd.DataFrame, run: Path) -> dict:
    ours = quantify([run], targets).set_index("peak_label")
    out = {"targets": len(targets)}
    for name, points in (
        ("MINT's reading", frame),
        ("MINT on float64 points", exact_frame(METABO)),
    ):
        theirs = mint_results(points, targets).set_index("peak_label").loc[ours.index]
        out[f"{name}: with points"] = int((theirs["peak_n_datapoints"] > 0).sum())
        for column in ("peak_n_datapoints", "peak_area", "peak_max"):
            same = np.isclose(
                ours[column].fillna(0).to_numpy(float),
                theirs[column].astype(float).fillna(0).to_numpy(float),
                rtol=1e-12,
                atol=0,
            )
            out[f"{name}: {column} equal"] = f"{same.mean():.1%}"
    return out


NUMPY_LOOP = """
import sys, time, numpy as np
a = np.random.default_rng(0).random(2_000_000)
start, n = time.perf_counter(), 0
while time.perf_counter() - start < float(sys.argv[1]):
    np.searchsorted(np.sort(a), a[:100_000]); (a * 2 + 1).sum(); n += 1
print(n / (time.perf_counter() - start))
"""


def machine_ceiling(seconds: float = 10) -> float:
    """What 2 processes give on this machine now against one, for plain numpy work (sorts,
    binary searches, sums of 2 million floats): the most 2 workers can give here."""
    import subprocess
    import sys

    def start():
        command = [sys.executable, "-c", NUMPY_LOOP, str(seconds)]
        return subprocess.Popen(command, stdout=subprocess.PIPE, text=True)

    def rate(process) -> float:
        out, _ = process.communicate(timeout=seconds * 10)
        return float(out)

    one = rate(start())
    pair = [start(), start()]
    return round(sum(rate(p) for p in pair) / one, 2)


def split_part(count: int, part: str, targets: str) -> float:
    """Seconds one plain process (no Dask cluster, one thread) quantifies runs ``A:B`` of the
    (b) copies in (imports and a first run beforehand, not timed)."""
    a, b = (int(x) for x in part.split(":"))
    runs = sorted((workdir() / f"quantify_runs_{count}").glob("run*.mzpeak"))[:count]
    wanted = pd.read_parquet(targets)
    with dask.config.set(scheduler="sync"):
        quantify(runs[:1], wanted)
        start = time.perf_counter()
        quantify(runs[a:b], wanted)
        return time.perf_counter() - start


def split_ceiling(count: int, targets: pd.DataFrame) -> float:
    """This workload's own ceiling on this machine now: one plain process quantifying every
    run, against two started together, each quantifying half the runs (the wall time of the
    later one). No scheduler, no transfers: the most 2 workers could give here."""
    import subprocess
    import sys

    path = workdir() / "split_targets.parquet"
    targets.to_parquet(path)
    module = "tests.benchmarks.bench_quantify"

    def start(part: str):
        command = [sys.executable, "-m", module, "--split", part, str(path), "--runs", str(count)]
        return subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)

    def seconds(process) -> float:
        out, _ = process.communicate(timeout=3600)
        return float(out.strip().splitlines()[-1])

    one = seconds(start(f"0:{count}"))
    halves = [start(f"0:{count // 2}"), start(f"{count // 2}:{count}")]
    return round(one / max(seconds(p) for p in halves), 2)


def many_runs(run: Path, count: int, targets, mzml: Path, pairs: int = 1) -> dict:
    from ms_mint.processing import process_ms1_file
    from ms_mint.targets import standardize_targets

    from mzpeak_dask.parallel.cluster import cluster_client

    from ..helpers.repository import linked_copies
    from ..helpers.servers import cpu_seconds

    folder = workdir() / f"quantify_runs_{count}"
    folder.mkdir(exist_ok=True)
    runs = linked_copies(run, folder, count)
    start = time.perf_counter()
    process_ms1_file(str(mzml), standardize_targets(targets.copy()))
    mint_one = time.perf_counter() - start
    options = ClusterOptions(workers=2, threads_per_worker=1, dashboard=False)
    ones, twos = [], []  # (wall, CPU) pairs, one thread and 2 workers in turn
    with cluster_client(options) as client:
        quantify(runs[:2], targets, client=client)  # workers import and warm up
        with dask.config.set(scheduler="sync"):
            quantify(runs[:1], targets)  # imports, as the workers' warm-up
        pids = list(client.run(os.getpid).values())
        ceilings, splits = [], []
        for _ in range(pairs):
            ceilings.append(machine_ceiling())
            splits.append(split_ceiling(count, targets))
            with dask.config.set(scheduler="sync"):
                start, cpu = time.perf_counter(), time.process_time()
                quantify(runs, targets)
                ones.append((time.perf_counter() - start, time.process_time() - cpu))
            before = sum(cpu_seconds(p) for p in pids)
            start, cpu = time.perf_counter(), time.process_time()
            quantify(runs, targets, client=client)
            workers = sum(cpu_seconds(p) for p in pids) - before
            twos.append((time.perf_counter() - start, workers, time.process_time() - cpu))
    one = min(wall for wall, _ in ones)
    return {
        "runs": count,
        "targets": len(targets),
        "MINT one thread (one file x runs) s": round(mint_one * count, 2),
        "quantify one thread s (best)": round(one, 2),
        "speed-up one thread": round(mint_one * count / one, 1),
        "pairs (one thread s, 2 workers s)": [
            (round(a[0], 2), round(b[0], 2)) for a, b in zip(ones, twos, strict=True)
        ],
        "numpy work, 2 processes / 1, before each pair": ceilings,
        "this quantify split over 2 plain processes / 1, before each pair": splits,
        "2 workers / 1 thread per pair": [
            round(a[0] / b[0], 2) for a, b in zip(ones, twos, strict=True)
        ],
        "CPU s one thread": [round(c, 2) for _, c in ones],
        "CPU s 2 workers (workers, client)": [(round(w, 2), round(c, 2)) for _, w, c in twos],
        "load average after": round(os.getloadavg()[0], 2),
    }


def far_runs(count: int, targets, latency: float, pairs: int) -> dict:
    from mzpeak_dask.analysis.runs import open_run_source
    from mzpeak_dask.parallel.cluster import cluster_client

    from ..helpers.servers import range_server

    folder = workdir() / f"quantify_runs_{count}"  # made by (b)
    names = sorted(p.name for p in folder.glob("run*.mzpeak"))[:count]
    options = ClusterOptions(workers=2, threads_per_worker=1, dashboard=False)
    serial, side = [], []
    with cluster_client(options) as client:
        with range_server(folder) as server:  # workers import and warm up
            quantify([f"{server.url}/{n}" for n in names[:2]], targets, client=client)
        for _ in range(pairs):
            with range_server(folder, latency=latency) as server:
                start = time.perf_counter()
                runs = [r for n in names for r in open_run_source(f"{server.url}/{n}")]
                one_by_one = quantify(runs, targets, client=client)
                serial.append(time.perf_counter() - start)
            with range_server(folder, latency=latency) as server:
                start = time.perf_counter()
                together = quantify([f"{server.url}/{n}" for n in names], targets, client=client)
                side.append(time.perf_counter() - start)
    figures = [c for c in one_by_one.columns if c not in ("run", "peak_label")]
    return {
        "runs": len(names),
        "latency s": latency,
        "opened one by one by the caller s": [round(t, 2) for t in serial],
        "opened side by side on the workers s": [round(t, 2) for t in side],
        "gain per pair": [f"{1 - b / a:.0%}" for a, b in zip(serial, side, strict=True)],
        "same figures": bool(one_by_one[figures].equals(together[figures])),
    }


def far_opens(count: int, latency: float, pairs: int) -> dict:
    from mzpeak_dask.analysis import open_runs
    from mzpeak_dask.analysis.runs import OPEN_THREADS

    from ..helpers.servers import range_server

    folder = workdir() / f"quantify_runs_{count}"  # made by (b)
    names = sorted(p.name for p in folder.glob("run*.mzpeak"))[:count]
    with range_server(folder) as server:  # imports
        open_runs([f"{server.url}/{n}" for n in names[:2]])
    cores, own = [], []
    for _ in range(pairs):
        for times, workers in ((cores, os.cpu_count()), (own, None)):
            with range_server(folder, latency=latency) as server:
                with dask.config.set(num_workers=workers):
                    start = time.perf_counter()
                    runs = open_runs([f"{server.url}/{n}" for n in names])
                    times.append(time.perf_counter() - start)
            assert len(runs) == len(names)
    return {
        "runs": len(names),
        "latency s": latency,
        f"a thread per core ({os.cpu_count()}) s": [round(t, 2) for t in cores],
        f"at least {OPEN_THREADS} threads s": [round(t, 2) for t in own],
        "speed-up per pair": [round(a / b, 2) for a, b in zip(cores, own, strict=True)],
    }


def narrow_targets(run: Path, count: int, seed: int) -> pd.DataFrame:
    """``count`` targets of 10 ppm and 6 s on the strongest peak of random MS1 spectra."""
    from mzpeak_dask.analysis import open_runs
    from mzpeak_dask.analysis.archive_run import raw_spectrum

    rng = np.random.default_rng(seed)
    spectra = open_runs(str(run))[0].spectra
    ms1 = spectra.index[spectra["ms_level"] == 1].to_numpy()
    picks = np.sort(rng.choice(ms1, count, replace=False))
    mz = [float(m[np.argmax(i)]) for m, i in (raw_spectrum(str(run), int(k)) for k in picks)]
    time_ = spectra["time"].to_numpy()[picks]
    return pd.DataFrame(
        {
            "peak_label": [f"n{k}" for k in range(count)],
            "mz_mean": mz,
            "mz_width": 10.0,
            "rt_min": time_ - 0.05,
            "rt_max": time_ + 0.05,
        }
    )


def narrow(copies: int) -> dict:
    """Bytes the HTTP server sent for 20 narrow targets of a long run, and for an XIC of the
    same m/z over their RT span, against the archive's size."""
    from ..helpers.servers import range_server

    source = replicated(SMALL, copies)
    out = {"mzML MB": round(source.stat().st_size / 1e6)}
    served = workdir() / "narrow"
    served.mkdir(exist_ok=True)
    for layout in ("point", "chunked"):
        run = archive(source, layout, source.stem)
        targets = narrow_targets(run, 20, 5)
        size = run.stat().st_size
        # a copy each: no cache of one read serves the other
        for name in ("quantify", "xic"):
            shutil.copyfile(run, served / f"{name}.{layout}.mzpeak")
        with range_server(served) as server, dask.config.set(scheduler="sync"):
            server.served.reset()
            got = quantify([f"{server.url}/quantify.{layout}.mzpeak"], targets)
            read = server.served.bytes
            server.served.reset()
            span = (targets["rt_min"].min(), targets["rt_max"].max())
            xic([f"{server.url}/xic.{layout}.mzpeak"], targets["mz_mean"].tolist(), ppm=10, rt=span)
            xic_read = server.served.bytes
        out[f"{layout}: archive MB"] = round(size / 1e6, 1)
        out[f"{layout}: quantify read"] = f"{read / size:.1%}"
        out[f"{layout}: xic over their RT span read"] = f"{xic_read / size:.1%}"
        out[f"{layout}: targets with points"] = int((got["peak_n_datapoints"] > 0).sum())
    return out


def pyteomics_ion_map(source: Path, mz_edges, rt_edges) -> np.ndarray:
    """The baseline: pyteomics parses the mzML linearly (``use_index=False``: with lxml 6 its
    indexed iteration parsed 26 times slower here, 16.5 s against 0.62 s for 34 MB), and
    numpy.histogram2d bins the MS1 points."""
    from pyteomics import mzml

    times, mzs, weights = [], [], []
    with mzml.MzML(str(source), use_index=False) as reader:
        for s in reader:
            if s["ms level"] != 1:
                continue
            scan = s["scanList"]["scan"][0]["scan start time"]
            times.append(np.full(len(s["m/z array"]), float(scan)))
            mzs.append(s["m/z array"])
            weights.append(s["intensity array"])
    image, _, _ = np.histogram2d(
        np.concatenate(times),
        np.concatenate(mzs),
        [rt_edges, mz_edges],
        weights=np.concatenate(weights),
    )
    return image


def traced_peak(fn) -> tuple[object, int]:
    """``fn()`` and the peak of the memory it traced (tracemalloc), in MB."""
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1] >> 20
    finally:
        tracemalloc.stop()


def ion_maps(copies: int) -> dict:
    """Times measured without tracemalloc (it slows Python's allocations, pyteomics' far more
    than ours); the peak memory of each in a second call, traced. Ours as users run it (Dask's
    default scheduler: a thread per core, blocks of the run side by side) and on one thread."""
    from mzpeak_dask.analysis import open_runs

    source = replicated(SMALL, copies)
    run = archive(source, "point", source.stem)
    last = float(open_runs(str(run))[0].spectra["time"].max())  # the whole run's RT range
    mz_edges, rt_edges = np.linspace(100, 2000, 1001), np.linspace(0, last * 1.001, 1001)

    def ours(scheduler: str = "threads") -> np.ndarray:
        with dask.config.set(scheduler=scheduler):
            return ion_map([run], mz_edges, rt_edges).values[0]

    def best(fn, rounds: int = 3) -> float:
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times)

    ours()  # imports and the archive's first open
    want = pyteomics_ion_map(source, mz_edges, rt_edges)
    theirs = best(lambda: pyteomics_ion_map(source, mz_edges, rt_edges))
    threads, one = best(ours), best(lambda: ours("sync"))
    same = all(np.allclose(ours(s), want, rtol=1e-9, atol=1e-6) for s in ("threads", "sync"))
    _, theirs_peak = traced_peak(lambda: pyteomics_ion_map(source, mz_edges, rt_edges))
    _, ours_peak = traced_peak(ours)
    return {
        "mzML MB": round(source.stat().st_size / 1e6),
        "archive MB": round(run.stat().st_size / 1e6),
        "cores": os.cpu_count(),
        "pyteomics (use_index=False) + histogram2d s (best of 3)": round(theirs, 2),
        "ion_map s, Dask's default scheduler (best of 3)": round(threads, 2),
        "speed-up": round(theirs / threads, 1),
        "ion_map s, one thread (best of 3)": round(one, 2),
        "speed-up one thread": round(theirs / one, 1),
        "peak traced memory MB (pyteomics, ours)": (theirs_peak, ours_peak),
        "same bins": same,
    }


def waves() -> dict:
    import importlib

    from mzpeak_dask.analysis import open_runs

    from ..helpers.repository import linked_copies

    module = importlib.import_module("mzpeak_dask.analysis.quantify")
    source = replicated(METABO, 10)
    run = archive(source, "point", source.stem)
    folder = workdir() / "waves"
    folder.mkdir(exist_ok=True)
    runs = linked_copies(run, folder, 48)
    targets = targets_of(mint_frame(METABO), 100, 3, 1.0)
    out: dict = {"spectra a run": len(open_runs(str(run))[0].spectra)}
    default = module.WAVE_SPECTRA
    try:
        for label, wave in (("all at once", 10**12), ("waves of 20,000 spectra", 20_000)):
            module.WAVE_SPECTRA = wave
            peaks = []
            for count in (12, 48):
                with dask.config.set(scheduler="sync"):
                    quantify(runs[:1], targets)  # what a first call loads and keeps
                    tracemalloc.start()
                    try:
                        base = tracemalloc.get_traced_memory()[0]
                        quantify(runs[:count], targets)
                        peaks.append(round((tracemalloc.get_traced_memory()[1] - base) / 1e6, 1))
                    finally:
                        tracemalloc.stop()
            out[f"{label}: peak MB, 12 and 48 runs"] = peaks
    finally:
        module.WAVE_SPECTRA = default
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--targets", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--copies", type=int, default=30)
    parser.add_argument("--pairs", type=int, default=1, help="(b): one thread / 2 workers pairs")
    parser.add_argument("--latency", type=float, default=0.02, help="(r): s a request")
    parser.add_argument("--split", nargs=2, help=argparse.SUPPRESS)  # A:B TARGETS (b's ceiling)
    parser.add_argument("--parts", default="a,b,r,o,n,c,w", help="which parts to run")
    args = parser.parse_args()
    if args.split:
        print(split_part(args.runs, *args.split))
        return
    parts = args.parts.split(",")
    print(machine())
    run = archive(METABO, "chunked", "metabo")
    frame = mint_frame(METABO)
    if "a" in parts:
        targets = targets_of(frame, 300, 1, 1.0)
        print("(a) parity with MINT:", parity(targets, frame, run), flush=True)
    if "b" in parts:
        targets = targets_of(frame, args.targets, 2, 1.0)
        got = many_runs(run, args.runs, targets, METABO, args.pairs)
        print("(b) many runs (copies of one real run):", got, flush=True)
    if "r" in parts:
        targets = targets_of(frame, args.targets, 2, 1.0)
        got = far_runs(args.runs, targets, args.latency, args.pairs)
        print("(r) runs over HTTP, opened by the caller or the workers:", got, flush=True)
    if "o" in parts:
        got = far_opens(args.runs, args.latency, args.pairs)
        print("(o) runs over HTTP opened without a client:", got, flush=True)
    if "n" in parts:
        print("(n) narrow targets, bytes read:", narrow(args.copies), flush=True)
    if "c" in parts:
        print("(c) ion map:", ion_maps(args.copies))
    if "w" in parts:
        print("(w) the caller's memory over many runs:", waves())
    print(machine().replace("at start", "at the end"))


if __name__ == "__main__":
    main()
