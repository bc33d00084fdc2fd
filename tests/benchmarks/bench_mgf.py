"""MGF benchmark: the MGF reader's conversion against a bare pyteomics iteration, 2 workers
against 1, and the archive checked against pyteomics.

    python -m tests.benchmarks.bench_mgf [--source PATH] [--target-mb 100] [--rounds 3]

Input: ../shared/data/openms/GNPSExport_3_out.mgf (GNPS export, 199 spectra of about 160
peaks) replicated to about 100 MB — synthetic by replication (tests/helpers/replicate_mgf.py:
titles suffixed, retention times shifted). Prints, measured side by side in this one run, in
interleaved rounds (medians, each round printed too; the load average with them: figures on a
shared machine are noisy, ratios less so, CPU seconds least):

* a bare pyteomics iteration, ``mgf.read(path, use_index=False)`` (``mgf.MGF`` itself takes
  no ``use_index``), in this process (pyteomics already imported);
* a cold ``mzpeak-dask convert`` with the defaults (a fresh process, which chooses where to
  run from the input's size), as a ratio to the bare iteration (goal: at most 0.6);
* a cold conversion forced into one process (``--cluster inline``), as a ratio too;
* cold conversions forced onto a LocalCluster of 1 and of 2 workers (``--workers``), and the
  speed-up of 2 over 1, each cluster's start included;
* conversions on a LocalCluster of 1 and of 2 workers started (and warmed) beforehand, as
  batches and HPC jobs run, each in a fresh process, and the speed-up of 2 over 1 (goal: at
  least 1.7), with the busiest worker's CPU seconds;
* each cold run's CPU seconds (the process and its children), beside its wall time;
* the MGF reader alone (survey and records, no encoding), in this process, with the peak lines
  of a partition converted in one call (pyarrow's CSV parser) and, for comparison, one call a
  spectrum (numpy's text parser), in interleaved rounds;
* the archive of the default conversion checked against pyteomics: every spectrum's m/z and
  intensity bit for bit, ids, times, precursor m/z and charges of every spectrum, and every
  record of the reader equal to the pyteomics path's (tests/helpers/mgf_reference.py).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from pyteomics import mgf

from mzpeak_dask import open_archive
from mzpeak_dask.readers import ItemRange, mgf_text
from mzpeak_dask.readers.mgf import MGFFormat

from ..helpers.mgf_reference import assert_same, our_spectra, pyteomics_spectra
from ..helpers.replicate import copies_for
from ..helpers.replicate_mgf import replicate_mgf
from .common import DATA, ROOT, in_subprocess, machine, warm_cluster_run, workdir

SOURCE = DATA / "openms" / "GNPSExport_3_out.mgf"
READER = "mzpeak_dask.readers.mgf"


def replicated(source: Path, target_mb: float) -> tuple[Path, int]:
    copies = copies_for(source, target_mb)
    target = workdir() / f"{source.stem}_x{copies}.mgf"
    if not target.exists():
        partial = target.with_name(target.name + ".partial")
        replicate_mgf(source, partial, copies)
        os.replace(partial, target)
    return target, copies


def pyteomics_iterate(path: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds of a bare iteration, and the spectra it found."""
    wall, cpu = time.perf_counter(), time.process_time()
    with mgf.read(str(path), use_index=False) as reader:
        n = sum(1 for _ in reader)
    return time.perf_counter() - wall, time.process_time() - cpu, n


def reader_only(path: Path) -> tuple[float, float, int]:
    wall, cpu = time.perf_counter(), time.process_time()
    survey = MGFFormat.survey(str(path))
    offsets = survey.spectrum_offsets
    items = ItemRange("spectrum", 0, survey.spectrum_count, int(offsets[0]), int(offsets[-1]))
    n = sum(1 for _ in MGFFormat.read(str(path), items, survey.hints))
    return time.perf_counter() - wall, time.process_time() - cpu, n


def cold_convert(source: Path, output: Path, *flags: str) -> tuple[float, float, str]:
    """``mzpeak-dask convert`` in a fresh process: wall and CPU seconds (its own and its
    children's: the workers), and the line saying where it ran."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "mzpeak_dask", "convert", str(source), str(output)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [*command, "--overwrite", *flags], capture_output=True, text=True, env=env, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line for line in done.stderr.splitlines() if line.startswith(("running", "starting"))]
    return wall, cpu, lines[0] if lines else "as forced"


def check_archive(archive_path: Path, source: Path) -> str:
    """The archive against pyteomics (see the module's docstring); raises on a difference."""
    with mgf.read(str(source), use_index=False) as reader:
        spectra = list(reader)
    with zipfile.ZipFile(archive_path) as z:
        points = pq.read_table(io.BytesIO(z.read("spectra_data.parquet"))).column(0)
    points = points.combine_chunks()
    index = points.field(0).to_numpy()
    mz, intensity = points.field("mz").to_numpy(), points.field("intensity").to_numpy()
    counts = np.array([len(s["m/z array"]) for s in spectra])
    assert np.array_equal(np.bincount(index, minlength=len(spectra)), counts), "point counts"
    order = np.argsort(index, kind="stable")
    assert np.array_equal(mz[order], np.concatenate([s["m/z array"] for s in spectra]))
    assert np.array_equal(intensity[order], np.concatenate([s["intensity array"] for s in spectra]))
    with mgf.MGF(str(source), use_header=True) as reader:
        header = reader.header.get("charge")
    with open_archive(archive_path) as archive:
        assert len(archive) == len(spectra)
        for k, s in enumerate(spectra):
            got, p = archive[k], s["params"]
            assert got.id == f"index={k}"
            rt = p.get("rtinseconds")
            assert (got.time is None) if rt is None else got.time == float(rt) / 60.0
            [precursor] = got.precursors
            assert precursor.mz == p["pepmass"][0]
            charges = p.get("charge") or header
            assert precursor.charge == (int(charges[0]) if charges else None)
    assert_same(pyteomics_spectra(source), our_spectra(source), "reader records")
    return (
        f"{len(spectra):,} spectra, {len(mz):,} points: m/z and intensity bit for bit, ids, "
        "times, precursor m/z and charges equal to pyteomics'; every reader record equal to "
        "the pyteomics path's"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--target-mb", type=float, default=100.0)
    parser.add_argument("--rounds", type=int, default=3)
    if len(sys.argv) == 4 and sys.argv[1] == "run":
        print(json.dumps(warm_cluster_run(sys.argv[2], int(sys.argv[3]), READER)))
        return
    args = parser.parse_args()
    source, copies = replicated(args.source, args.target_mb)
    out = workdir()
    print(
        f"input: {source.name}, {source.stat().st_size / 1e6:.1f} MB, {args.source.name} "
        f"x{copies} (synthetic by replication); {machine()}"
    )
    names = ("parse", "cold", "inline", "one", "two")
    walls: dict[str, list[float]] = {k: [] for k in names}
    cpus: dict[str, list[float]] = {k: [] for k in names}
    choice, n = "", 0
    for r in range(args.rounds):  # interleaved, so that the machine's drift touches each alike
        wall, cpu, n = pyteomics_iterate(source)
        walls["parse"].append(wall)
        cpus["parse"].append(cpu)
        for name, flags in (
            ("cold", ()),
            ("inline", ("--cluster", "inline")),
            ("one", ("--workers", "1")),
            ("two", ("--workers", "2")),
        ):
            wall, cpu, where = cold_convert(source, out / f"mgf_{name}.mzpeak", *flags)
            walls[name].append(wall)
            cpus[name].append(cpu)
            choice = where if name == "cold" else choice
        print(
            f"  round {r + 1}: parse {walls['parse'][-1]:.2f} s, cold {walls['cold'][-1]:.2f} s "
            f"({walls['cold'][-1] / walls['parse'][-1]:.2f}), inline {walls['inline'][-1]:.2f} s "
            f"({walls['inline'][-1] / walls['parse'][-1]:.2f}), 1 worker {walls['one'][-1]:.2f} s, "
            f"2 workers {walls['two'][-1]:.2f} s ({walls['one'][-1] / walls['two'][-1]:.2f}x); "
            f"load {os.getloadavg()[0]:.2f}"
        )
    wall = {k: statistics.median(v) for k, v in walls.items()}
    cpu = {k: statistics.median(v) for k, v in cpus.items()}
    cold_ratios = [c / p for c, p in zip(walls["cold"], walls["parse"], strict=True)]
    speedups = [a / b for a, b in zip(walls["one"], walls["two"], strict=True)]
    print(f"pyteomics mgf.read(use_index=False) iteration  {wall['parse']:6.2f} s  "
          f"(CPU {cpu['parse']:.2f} s; {n:,} spectra)")  # fmt: skip
    print(f"cold convert, defaults          {wall['cold']:6.2f} s  ratio "
          f"{statistics.median(cold_ratios):.2f} (goal <= 0.60)  CPU {cpu['cold']:.2f} s, "
          f"CPU ratio {cpu['cold'] / cpu['parse']:.2f}  ({choice})")  # fmt: skip
    inline_ratios = [c / p for c, p in zip(walls["inline"], walls["parse"], strict=True)]
    print(f"cold convert, --cluster inline  {wall['inline']:6.2f} s  ratio "
          f"{statistics.median(inline_ratios):.2f}  CPU {cpu['inline']:.2f} s, "
          f"CPU ratio {cpu['inline'] / cpu['parse']:.2f}")  # fmt: skip
    print(f"cold convert, --workers 1       {wall['one']:6.2f} s  CPU {cpu['one']:.2f} s")
    print(f"cold convert, --workers 2       {wall['two']:6.2f} s  CPU {cpu['two']:.2f} s  "
          f"speed-up {statistics.median(speedups):.2f}x (cluster starts included)")  # fmt: skip
    module = "tests.benchmarks.bench_mgf"
    one = in_subprocess(module, "run", str(source), "1")
    two = in_subprocess(module, "run", str(source), "2")
    cpu_one, cpu_two = one["busiest_worker_cpu"], two["busiest_worker_cpu"]
    print(f"LocalCluster, started beforehand: 1 worker {one['seconds']:.2f} s, 2 workers "
          f"{two['seconds']:.2f} s: speed-up {one['seconds'] / two['seconds']:.2f}x (goal >= "
          f"1.70); CPU of the busiest worker {cpu_one:.2f} s / {cpu_two:.2f} s: "
          f"{cpu_one / cpu_two:.2f}")  # fmt: skip
    bulk: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for _ in range(args.rounds):  # the reader with and without its one-call peak conversion
        for on in (True, False):
            mgf_text.BULK_PEAKS = on
            t, c, count = reader_only(source)
            bulk[on].append((t, c))
    mgf_text.BULK_PEAKS = True
    for on, label in ((True, "one call a partition"), (False, "one call a spectrum ")):
        t = statistics.median(x[0] for x in bulk[on])
        c = statistics.median(x[1] for x in bulk[on])
        print(f"MGF reader alone, peaks parsed in {label}  {t:6.2f} s  CPU {c:.2f} s  "
              f"({count:,} spectra), CPU ratio to pyteomics {c / cpu['parse']:.2f}")  # fmt: skip
    print("archive check: " + check_archive(out / "mgf_cold.mzpeak", source))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
