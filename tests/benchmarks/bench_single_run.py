"""Single-run benchmark: conversion speed against bare pyteomics, cold starts, per-core
encoding, archive size, random access.

    python -m tests.benchmarks.bench_single_run [--source PATH] [--copies 34]

Input: ../shared/data/openms/FeatureFinderMetaboIdent_1_input.mzML (Q Exactive, profile)
replicated to >= 100 MB — synthetic by replication. Prints, measured side by side in this one
run (with the load average: figures on a shared machine are noisy, ratios less so):

* the package's bytecode compiled first (as installed; see :func:`package_bytecode`);
* bare parses: pyteomics ``MzML(use_index=False)`` iterating with arrays decoded, and this
  package's lean parser building its records (arrays decoded), as the reference for ratios;
* conversions as ratios to the bare pyteomics parse: a cold ``mzpeak-dask convert`` with the
  defaults (a fresh process; it chooses where to run from the size of the input), a cold one
  forced onto a LocalCluster of 2 workers, one on a cluster already running (how batch and HPC
  jobs use it), and one in this process (inline); the bare parses and the cold conversions are
  the medians of five interleaved rounds (each round printed too: one round is at the mercy
  of the machine's other load), and the goal's figure is the median of the rounds' ratios
  (each cold conversion against the parse of its round); then where a cold 2-worker
  conversion spends its time (imports, cluster start, conversion, close);
* for comparison only (not a way the package runs): the same cold conversion with its tasks
  on a ``concurrent.futures`` pool of 2 spawned processes instead of Dask (:data:`POOL`), in
  the same rounds, to show what Dask's start costs a single cold run;
* a 3 MB real run: a cold ``convert`` with the defaults against a cold ``--cluster inline`` one
  (medians of rounds in which each goes first in turn), and a cold LocalCluster one;
* the executors' cold starts: a LocalCluster of 2 processes, of 2 threads in this process,
  and a conversion on each against one process;
* per-core encoding: zero runs, null marking, metadata rows and the layout table, then the
  Parquet write, on parsed records in one process, in points per second (a first pass, and
  the median of three after it): on this run, and on mzdata/small.mzML x30 (bench_scale's
  102 MB run, spectra 20 times as long); with each run's lean parse in CPU seconds (the median
  of three), the whole conversion's cost a core in MB of mzML a second;
* output / mzML size, the size of small.mzML's own archive;
* median milliseconds to read one random spectrum by index from the archive, beside pyteomics'
  indexed ``get_by_index`` on the mzML;
* the row-group-size trade-off (archive size and random access per row-group size).
"""

from __future__ import annotations

import argparse
import compileall
import io
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
from pyteomics import mzml

from mzpeak_dask import ClusterOptions, ConvertOptions, convert, open_archive
from mzpeak_dask.archive.parquet import data_writer_properties
from mzpeak_dask.encode.contracts import EncodedPartition
from mzpeak_dask.encode.partition import _encode_spectra
from mzpeak_dask.encode.plan import plan_run
from mzpeak_dask.format import vocabulary as V
from mzpeak_dask.layouts import layout_of
from mzpeak_dask.parallel.cluster import cluster_client
from mzpeak_dask.readers import FORMATS, SPECTRA, MzMLFormat
from mzpeak_dask.readers.base import ItemRange
from mzpeak_dask.support.heap import keep_freed_blocks

from .common import DATA, ROOT, machine, median_ms, replicated, timed, workdir

SMALL = DATA / "mzdata" / "small.mzML"
PROFILE = DATA / "openms" / "FeatureFinderMetaboIdent_1_input.mzML"
THREE_MB = PROFILE  # 3.0 MB, 378 profile spectra
ROUNDS = 5  # the bare parses and cold conversions, each measured this many times
SMALL_ROUNDS = 6  # the 3 MB run's cold conversions, defaults and inline, in alternate order


def pyteomics_iterate(path: Path) -> int:
    return sum(1 for _ in mzml.MzML(str(path), use_index=False))


def lean_iterate(path: Path) -> int:
    survey = MzMLFormat.survey(str(path))
    offsets = survey.spectrum_offsets
    items = ItemRange(SPECTRA, 0, survey.spectrum_count, int(offsets[0]), int(offsets[-1]))
    return sum(1 for _ in MzMLFormat.read(str(path), items, survey.hints))


def fresh_python(*args: str) -> tuple[float, subprocess.CompletedProcess]:
    """``python ARGS`` in a fresh process, this checkout first on its path: its seconds, and
    what it printed (RuntimeError with its stderr if it fails)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, check=False
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return seconds, done


def cold_convert(source: Path, output: Path, *flags: str) -> tuple[float, str]:
    """``mzpeak-dask convert`` in a fresh process: seconds, and the line saying where it ran."""
    command = ["-m", "mzpeak_dask", "convert", str(source), str(output), "--overwrite"]
    seconds, done = fresh_python(*command, *flags)
    lines = [line for line in done.stderr.splitlines() if line.startswith(("running", "starting"))]
    return seconds, lines[0] if lines else "as forced"


def package_bytecode() -> str:
    """Compile the package's bytecode if it is missing or stale, as installing a wheel does
    and ``make setup`` does: a cold process then imports it as an installed package, not from
    source (where PYTHONDONTWRITEBYTECODE is set, as on some shared machines, an editable
    checkout never writes it, and every process compiles about 100 modules again)."""
    package = ROOT / "mzpeak_dask"
    start = time.perf_counter()
    if not compileall.compile_dir(package, quiet=1):
        raise RuntimeError(f"cannot compile {package}")
    return (
        f"bytecode of {package.name}/ compiled or up to date ({time.perf_counter() - start:.2f} s;"
        f" PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', 'unset')})"
    )


BREAKDOWN = """
import sys, time
start = time.perf_counter()
import mzpeak_dask.cli
imported = time.perf_counter()
import distributed
from mzpeak_dask import ClusterOptions, ConvertOptions, convert
from mzpeak_dask.parallel.cluster import cluster_client
if __name__ == "__main__":
    dask_imported = time.perf_counter()
    with cluster_client(ClusterOptions(workers=2, dashboard=False)) as client:
        started = time.perf_counter()
        convert(sys.argv[1], sys.argv[2], ConvertOptions(overwrite=True), client=client)
        converted = time.perf_counter()
    closed = time.perf_counter()
    print(imported - start, dask_imported - imported, started - dask_imported,
          converted - started, closed - converted)
"""


POOL = """
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
import mzpeak_dask.cli
from mzpeak_dask.archive.job import RunJob
from mzpeak_dask.options import ConvertOptions
from mzpeak_dask.parallel import tasks
from mzpeak_dask.model.run_paths import RunPaths
if __name__ == "__main__":
    options, wait = ConvertOptions(overwrite=True), 600
    job = RunJob(RunPaths.of(sys.argv[1], sys.argv[2]), options)
    staging = str(job.staging.path)
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        plan = pool.submit(tasks.plan, job.paths, staging, options).result(wait)
        offsets = tasks.planned_offsets(plan)
        parts = [
            pool.submit(tasks.write_partition_file, staging, p, plan.spec, offsets[n])
            for n, p in enumerate(plan.partitions)
        ]
        written = [f.result(wait) for f in parts]
        args = (job.paths, options, plan, staging, written, None)
        finished = pool.submit(tasks.finish, *args).result(wait)
    job.put_in_place(finished.result, Path(finished.archive))
"""


def cold_pool(source: Path, output: Path) -> float:
    """The cold conversion with its tasks on a pool of 2 spawned processes, without Dask
    (:data:`POOL`; a comparison, not a way the package runs): seconds."""
    return fresh_python("-c", POOL, str(source), str(output))[0]


def cold_breakdown(source: Path, output: Path) -> None:
    """Where a cold conversion on a LocalCluster of 2 workers spends its time, in a fresh
    process: importing the command, importing distributed, starting the cluster (spawned
    workers), the conversion itself, closing the cluster."""
    total, done = fresh_python("-c", BREAKDOWN, str(source), str(output))
    parts = [float(x) for x in done.stdout.split()]
    names = ("import the command", "import distributed", "start", "convert", "close")
    shown = ", ".join(f"{n} {t:.2f} s" for n, t in zip(names, parts, strict=True))
    print(f"cold 2-worker convert, breakdown: {shown}; process {total:.2f} s in all")


def executor_starts(source: Path, out: Path) -> float:
    from distributed import Client, LocalCluster

    def processes() -> None:
        with cluster_client(ClusterOptions(workers=2, dashboard=False)):
            pass

    def threads(convert_too: bool = False) -> None:
        with (
            LocalCluster(
                processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            if convert_too:
                convert(
                    source, out / "threads.mzpeak", ConvertOptions(overwrite=True), client=client
                )

    t_processes, _ = timed(processes)
    t_threads, _ = timed(threads)
    t_convert_threads, _ = timed(threads, True)
    print(
        f"executor start+stop: LocalCluster 2 processes {t_processes:.2f} s, "
        f"2 threads in this process {t_threads:.2f} s, in-process 0 s"
    )
    return t_convert_threads


PER_CORE_PASSES = 3  # after the first


def per_core_encoding(source: Path, label: str) -> None:
    """Encode + write of parsed records in this process, in points per second: the first pass
    (its memory touched for the first time, as a fresh worker's first partitions), and the
    median of the passes after it (as a worker that has converted before: a batch's workers)."""
    options = ConvertOptions()
    keep_freed_blocks()  # as encode_partition does before it reads
    with tempfile.TemporaryDirectory(dir=workdir()) as staging:
        plan = plan_run(source, Path(staging), options)
        fmt = FORMATS[plan.format.name]
        parts = [p for p in plan.partitions if p.items.kind == SPECTRA]
        parse = statistics.median(_parsed_seconds(fmt, parts) for _ in range(PER_CORE_PASSES))
        records = [list(fmt.read(p.path, p.items, p.hints)) for p in parts]
    points = sum(len(r.arrays[0].values) for recs in records for r in recs if r.arrays)
    spectra = sum(len(recs) for recs in records)
    passes = [_encoded_and_written(parts, records, plan, options)]
    passes += [_encoded_and_written(parts, records, plan, options) for _ in range(PER_CORE_PASSES)]
    first, later = passes[0], sorted(passes[1:], key=lambda p: p[0] + p[1])
    encode_seconds, write_seconds, cpu, stored = later[len(later) // 2]
    print(
        f"per-core encode + write, {label}: "
        f"{points / (encode_seconds + write_seconds) / 1e6:.2f} M points/s, median of "
        f"{PER_CORE_PASSES} passes after a first of {points / (first[0] + first[1]) / 1e6:.2f} M "
        f"(encode {encode_seconds:.2f} s, Parquet write {write_seconds:.2f} s; first pass "
        f"{first[0]:.2f} s and {first[1]:.2f} s; {points:,} points parsed in {spectra:,} spectra, "
        f"{points // spectra:,} a spectrum; {stored:,} stored; goal >= 10 M points/s); by CPU "
        f"time {points / cpu / 1e6:.2f} M points/s ({cpu:.2f} s)"
    )
    megabytes = source.stat().st_size / 1e6
    print(
        f"per-core conversion, {label}: lean parse {parse:.2f} s CPU (median of "
        f"{PER_CORE_PASSES}) + encode + write {cpu:.2f} s = {megabytes / (parse + cpu):.1f} MB of "
        f"mzML a second a core"
    )


def _parsed_seconds(fmt, parts) -> float:
    """CPU seconds of one parse of every partition, as a worker reads them: each partition's
    records dropped before the next is read."""
    start = time.process_time()
    for p in parts:
        records = list(fmt.read(p.path, p.items, p.hints))
        del records
    return time.process_time() - start


def _encoded_and_written(parts, records, plan, options) -> tuple[float, float, float, int]:
    """One pass over the partitions: encode seconds, Parquet write seconds, CPU seconds of
    both, points stored."""
    layout = layout_of(options)
    encode_seconds = write_seconds = 0.0
    stored = 0
    cpu = time.process_time()  # less moved than the wall clock by other work on the machine
    for part, recs in zip(parts, records, strict=True):
        out = EncodedPartition(part.sequence, part.items.kind)
        seconds, _ = timed(_encode_spectra, recs, plan.spec, out)
        encode_seconds += seconds
        table = out.data[V.SPECTRUM]
        stored += out.points[V.SPECTRUM]
        schema = plan.spec.schemas[V.SPECTRUM]
        index_path = f"{layout.PREFIX}.{schema.index_column}"
        props = data_writer_properties(table.schema, options, index_path)
        start = time.perf_counter()
        with pq.ParquetWriter(io.BytesIO(), table.schema, **props) as writer:
            writer.write_table(table, row_group_size=options.row_group_points)
        write_seconds += time.perf_counter() - start
    return encode_seconds, write_seconds, time.process_time() - cpu, stored


def random_reads(path: Path, n: int, picks: list[int]) -> float:
    samples = []
    with open_archive(path) as archive:
        for i in picks:
            start = time.perf_counter()
            archive[i]
            samples.append(time.perf_counter() - start)
    return median_ms(samples)


def open_cost(path: Path) -> tuple[float, int]:
    start = time.perf_counter()
    with open_archive(path) as archive:
        archive[0]
        footer = archive.signal("spectrum").file.metadata.serialized_size
    return (time.perf_counter() - start) * 1000, footer


def pyteomics_indexed(path: Path) -> int:
    """How many spectra pyteomics' reader of the file's own index knows (on the replicated
    103 MB run, pyteomics 5.0.1 with lxml 6.2.1 left out the last 321 of 12,920)."""
    return len(mzml.PreIndexedMzML(str(path)).default_index)


def pyteomics_reads(path: Path, picks: list[int]) -> float:
    """Median seconds of pyteomics' indexed reads. With lxml 6, pyteomics' parse from a
    spectrum's offset fails and it parses from the start of the file instead, so each read
    costs in proportion to where the spectrum sits (issue 47 found this for mzXML)."""
    reader = mzml.PreIndexedMzML(str(path))
    samples = []
    for i in picks:
        start = time.perf_counter()
        reader.get_by_index(i)
        samples.append(time.perf_counter() - start)
    return median_ms(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=PROFILE)
    parser.add_argument("--copies", type=int, default=34)
    args = parser.parse_args()
    source = replicated(args.source, args.copies)
    out = workdir()
    size = source.stat().st_size
    print(
        f"input: {source.name}, {size / 1e6:.1f} MB, {args.source.name} x{args.copies} "
        f"(synthetic by replication); {machine()}"
    )

    print(package_bytecode())
    rounds: dict[str, list[float]] = {
        "parse": [],
        "lean": [],
        "cold": [],
        "cold2": [],
        "inline": [],
        "pool": [],
    }
    for _ in range(ROUNDS):  # interleaved, so that a machine's drift touches each alike
        t, n = timed(pyteomics_iterate, source)
        rounds["parse"].append(t)
        rounds["lean"].append(timed(lean_iterate, source)[0])
        t, choice = cold_convert(source, out / "cold.mzpeak")
        rounds["cold"].append(t)
        rounds["cold2"].append(cold_convert(source, out / "cold2.mzpeak", "--workers", "2")[0])
        rounds["inline"].append(
            cold_convert(source, out / "cold3.mzpeak", "--cluster", "inline")[0]
        )
        rounds["pool"].append(cold_pool(source, out / "pool.mzpeak"))
    t_parse, t_lean, t_cold, t_cold_cluster, t_cold_inline, t_pool = (
        statistics.median(v) for v in rounds.values()
    )
    with cluster_client(ClusterOptions(workers=2, dashboard=False)) as client:
        t_running, _ = timed(
            convert, source, out / "running.mzpeak", ConvertOptions(overwrite=True), client=client
        )
    t_inline, result = timed(
        convert,
        source,
        out / "single.mzpeak",
        ConvertOptions(overwrite=True),
        cluster=ClusterOptions(cluster="inline"),
    )
    print(f"pyteomics parse (bare)          {t_parse:6.2f} s  ratio 1.00  ({n} spectra)")
    print(f"lean parse (bare, records)      {t_lean:6.2f} s  ratio {t_lean / t_parse:.2f}")
    print(
        f"cold convert, defaults          {t_cold:6.2f} s  ratio {t_cold / t_parse:.2f}  ({choice})"
    )
    print(
        f"cold convert, --workers 2       {t_cold_cluster:6.2f} s  "
        f"ratio {t_cold_cluster / t_parse:.2f}  (starts the cluster)"
    )
    print(
        f"cold convert, --cluster inline  {t_cold_inline:6.2f} s  "
        f"ratio {t_cold_inline / t_parse:.2f}  (this process, no cluster)"
    )
    print(
        f"convert, running 2-worker cluster {t_running:4.2f} s  ratio {t_running / t_parse:.2f}"
        "  (cluster started beforehand)"
    )
    print(f"convert, inline (this process)  {t_inline:6.2f} s  ratio {t_inline / t_parse:.2f}")
    print(
        f"cold, tasks on a pool of 2 spawned processes, no Dask (comparison only) {t_pool:.2f} s"
        f"  ratio {t_pool / t_parse:.2f}"
    )
    print(f"  the first five lines and the last: medians of {ROUNDS} interleaved rounds, in s:")
    for name, values in rounds.items():
        print(f"   {name:6s} " + ", ".join(f"{v:.2f}" for v in values))
    for name in ("cold", "pool"):
        ratios = [c / p for c, p in zip(rounds[name], rounds["parse"], strict=True)]
        shown = ", ".join(f"{r:.2f}" for r in ratios)
        print(f"   {name} / parse, round by round: {shown}; median {statistics.median(ratios):.2f}")
    print(
        "goal: cold convert with defaults <= 0.6x the bare pyteomics parse (moonshot 0.3x), "
        "the median of the rounds' ratios (cold / parse above)"
    )
    cold_breakdown(source, out / "breakdown.mzpeak")

    small_out = out / "three_mb.mzpeak"
    small: dict[str, list[float]] = {"defaults": [], "inline": []}
    small_choice = ""
    for i in range(SMALL_ROUNDS):  # which goes first alternates: a first run pays the most
        for kind in list(small) if i % 2 == 0 else reversed(list(small)):
            flags = ("--cluster", "inline") if kind == "inline" else ()
            t, choice = cold_convert(THREE_MB, small_out, *flags)
            small[kind].append(t)
            if kind == "defaults":
                small_choice = choice  # where the defaults put the run
    t_small, t_small_inline = (statistics.median(v) for v in small.values())
    t_small_cluster, _ = cold_convert(THREE_MB, small_out, "--workers", "2")
    print(
        f"{THREE_MB.name} ({THREE_MB.stat().st_size / 1e6:.1f} MB), cold, medians of "
        f"{SMALL_ROUNDS} rounds: defaults {t_small:.2f} s ({small_choice}), --cluster inline "
        f"{t_small_inline:.2f} s; --workers 2 (once) {t_small_cluster:.2f} s; defaults / inline "
        f"{t_small / t_small_inline:.2f} (goal <= 1.3)"
    )

    t_threads = executor_starts(source, out)
    print(
        f"convert on 2 threads in this process {t_threads:.2f} s against one process "
        f"{t_inline:.2f} s (ratio {t_threads / t_inline:.2f}; "
        f"{'threads pay' if t_threads < t_inline else 'threads do not pay'})"
    )
    per_core_encoding(source, "this run")
    # the points a spectrum holds move the figure: per-spectrum work (metadata rows, one
    # factorisation each) against per-point work (spacings, null checks, compression)
    per_core_encoding(replicated(SMALL, 30), "small.mzML x30 (bench_scale's run)")

    print(
        f"output / mzML size              {result.output_bytes / size:.3f} "
        f"({result.output_bytes:,} B)"
    )
    small = convert(
        SMALL,
        out / "small.mzpeak",
        ConvertOptions(overwrite=True),
        cluster=ClusterOptions(cluster="inline"),
    )
    print(
        f"small.mzML archive              {small.output_bytes:,} B "
        f"(reference writer: 2,215,870 B; goal <= 2,000,000 B)"
    )

    known = min(n, pyteomics_indexed(source))  # both read the same spectra
    picks = random.Random(7).sample(range(known), 200)
    ours = random_reads(out / "single.mzpeak", n, picks)
    theirs = pyteomics_reads(source, picks)
    print(
        f"random spectrum by index        archive {ours:.2f} ms  pyteomics indexed mzML "
        f"{theirs:.2f} ms  (median of 200 among the first {known:,} of {n:,}, those "
        f"pyteomics' index holds; ratio {theirs / ours:.1f}x faster)"
    )

    print(
        "row-group trade-off (points per row group: archive bytes, footer bytes, open + first "
        "read ms, random read median ms)"
    )
    for points in (4_096, 8_192, 16_384, 65_536, 262_144, 1_048_576):
        path = out / f"rg{points}.mzpeak"
        convert(
            source,
            path,
            ConvertOptions(overwrite=True, row_group_points=points),
            cluster=ClusterOptions(cluster="inline"),
        )
        opened, footer = open_cost(path)
        print(
            f"  {points:>9,}: {path.stat().st_size:>12,} B  {footer:>9,} B  {opened:6.1f} ms"
            f"  {random_reads(path, n, picks):6.2f} ms"
        )


if __name__ == "__main__":
    main()
