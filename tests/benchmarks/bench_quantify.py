"""Targeted quantification and ion maps against MINT (``ms-mint``, the ``bench`` extra) and
pyteomics + numpy.histogram2d, side by side in one run.

    python -m tests.benchmarks.bench_quantify [--targets 1000] [--runs 50] [--copies 20]

* (a) the same numbers as MINT (``peak_area``, ``peak_max``, ``peak_n_datapoints``) on
  openms/FeatureFinderMetaboIdent_1_input.mzML, MS1, ``intensity_threshold`` 1 (MINT truncates
  intensities to integers: with a threshold of 1 both keep the same points);
* (b) ``--targets`` targets x ``--runs`` runs: the runs are copies of that same real run
  (replicated, said so), converted once (chunked layout); our quantify on one thread
  (``scheduler="sync"``) and on a LocalCluster of 2 workers, against MINT's per-file
  integration (``process_ms1_file``) on one file, times the number of runs; and the bytes of
  the archive's Parquet column chunks read for 20 narrow targets (10 ppm, 0.5 min) against the
  archive's size;
* (c) the ion map at 1000 x 1000 bins of mzdata/small.mzML replicated ``--copies`` times,
  converted (point layout), against pyteomics reading the mzML + numpy.histogram2d, with the
  peak memory (tracemalloc) of each.
"""

from __future__ import annotations

import argparse
import shutil
import time
import tracemalloc
from pathlib import Path

import dask
import numpy as np
import pandas as pd

from mzpeak_dask import ClusterOptions, ConvertOptions, convert
from mzpeak_dask.analysis import ion_map, quantify
from mzpeak_dask.read.signal import SignalReader

from .common import DATA, machine, replicated, workdir

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


def parity(targets: pd.DataFrame, frame: pd.DataFrame, run: Path) -> dict:
    theirs = mint_results(frame, targets).set_index("peak_label")
    ours = quantify([run], targets).set_index("peak_label").loc[theirs.index]
    n_same = (ours["peak_n_datapoints"] == theirs["peak_n_datapoints"]).mean()
    # MINT sums integer-truncated intensities: at most one unit per point apart
    area_ok = np.abs(ours["peak_area"] - theirs["peak_area"]) <= theirs["peak_n_datapoints"]
    max_ok = np.abs(ours["peak_max"].fillna(0) - theirs["peak_max"].fillna(0)) < 1
    return {
        "targets": len(theirs),
        "with points": int((theirs["peak_n_datapoints"] > 0).sum()),
        "peak_n_datapoints equal": f"{n_same:.1%}",
        "peak_area within truncation": f"{area_ok.mean():.1%}",
        "peak_max within truncation": f"{max_ok.mean():.1%}",
    }


class ReadBytes:
    """Bytes of the Parquet column chunks the archive reads (compressed, as stored)."""

    def __init__(self) -> None:
        self.bytes = 0
        self._read = SignalReader.read_groups

    def __enter__(self):
        counter, read = self, self._read

        def counted(reader, groups, columns=None):
            md = reader.file.metadata
            names = None if columns is None else set(columns)
            for g in groups:
                group = md.row_group(g)
                for c in range(group.num_columns):
                    column = group.column(c)
                    if names is None or column.path_in_schema in names:
                        counter.bytes += column.total_compressed_size
            return read(reader, groups, columns)

        SignalReader.read_groups = counted
        return self

    def __exit__(self, *exc) -> None:
        SignalReader.read_groups = self._read


def many_runs(run: Path, count: int, frame: pd.DataFrame, targets, mzml: Path) -> dict:
    from distributed import Client, LocalCluster
    from ms_mint.processing import process_ms1_file
    from ms_mint.targets import standardize_targets

    folder = workdir() / f"quantify_runs_{count}"
    folder.mkdir(exist_ok=True)
    runs = []
    for k in range(count):
        path = folder / f"run{k:03d}.mzpeak"
        if not path.exists():
            shutil.copyfile(run, path)
        runs.append(path)
    start = time.perf_counter()
    process_ms1_file(str(mzml), standardize_targets(targets.copy()))
    mint_one = time.perf_counter() - start
    with dask.config.set(scheduler="sync"):
        start = time.perf_counter()
        quantify(runs, targets)
        one = time.perf_counter() - start
    with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1") as cluster:
        with Client(cluster) as client:
            quantify(runs[:2], targets, client=client)  # workers import and warm up
            start = time.perf_counter()
            quantify(runs, targets, client=client)
            two = time.perf_counter() - start
    narrow = targets_of(frame, 20, 5, 0.5)
    with ReadBytes() as counted, dask.config.set(scheduler="sync"):
        quantify([run], narrow)
    return {
        "runs": count,
        "targets": len(targets),
        "MINT one thread (one file x runs) s": round(mint_one * count, 2),
        "quantify one thread s": round(one, 2),
        "speed-up one thread": round(mint_one * count / one, 1),
        "quantify 2 workers s": round(two, 2),
        "2 workers / 1 thread": round(one / two, 2),
        "narrow targets: bytes read / archive": f"{counted.bytes / run.stat().st_size:.1%}",
    }


def ion_maps(copies: int) -> dict:
    from pyteomics import mzml

    source = replicated(SMALL, copies)
    run = archive(source, "point", source.stem)
    mz_edges, rt_edges = np.linspace(100, 2000, 1001), np.linspace(0, 0.6 * copies, 1001)
    tracemalloc.start()
    start = time.perf_counter()
    times, mzs, weights = [], [], []
    with mzml.MzML(str(source)) as reader:
        for s in reader:
            if s["ms level"] != 1:
                continue
            scan = s["scanList"]["scan"][0]["scan start time"]
            times.append(np.full(len(s["m/z array"]), float(scan)))
            mzs.append(s["m/z array"])
            weights.append(s["intensity array"])
    want, _, _ = np.histogram2d(
        np.concatenate(times), np.concatenate(mzs), [rt_edges, mz_edges],
        weights=np.concatenate(weights),
    )
    theirs = time.perf_counter() - start
    theirs_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    start = time.perf_counter()
    with dask.config.set(scheduler="sync"):
        got = ion_map([run], mz_edges, rt_edges).values[0]
    ours = time.perf_counter() - start
    ours_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "mzML MB": round(source.stat().st_size / 1e6),
        "archive MB": round(run.stat().st_size / 1e6),
        "pyteomics + histogram2d s": round(theirs, 2),
        "ion_map one thread s": round(ours, 2),
        "speed-up": round(theirs / ours, 1),
        "peak traced memory MB (pyteomics, ours)": (theirs_peak >> 20, ours_peak >> 20),
        "same bins": bool(np.allclose(got, want, rtol=1e-9, atol=1e-6)),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--targets", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--copies", type=int, default=20)
    args = parser.parse_args()
    print(machine())
    run = archive(METABO, "chunked", "metabo")
    frame = mint_frame(METABO)
    print("(a) parity with MINT:", parity(targets_of(frame, 300, 1, 1.0), frame, run))
    targets = targets_of(frame, args.targets, 2, 1.0)
    print("(b) many runs (copies of one real run):", many_runs(run, args.runs, frame, targets,
                                                               METABO))
    print("(c) ion map:", ion_maps(args.copies))


if __name__ == "__main__":
    main()
