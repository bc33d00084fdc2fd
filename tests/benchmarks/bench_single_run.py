"""Single-run benchmark: conversion speed against bare pyteomics, archive size, random access.

    python -m tests.benchmarks.bench_single_run [--copies 30]

Input: ../shared/data/mzdata/small.mzML (Thermo LTQ FT, 48 spectra, profile + centroid)
replicated to >= 100 MB — synthetic by replication. Prints, measured in this one run:

* conversion time / the time pyteomics alone needs to iterate and decode the file, for one
  process (no Dask), for the default local cluster (2 workers on this machine) started by the
  call, and for a cluster that is already running (how batch and HPC jobs use it: one cluster,
  many runs);
* output size / mzML size, and the size of small.mzML's own archive;
* median milliseconds to read one random spectrum by index from the archive, beside pyteomics'
  indexed ``get_by_index`` on the mzML;
* the row-group-size trade-off (archive size and random access per row-group size).
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from pyteomics import mzml

from mzpeak_dask import ClusterOptions, ConvertOptions, convert, open_archive
from mzpeak_dask.parallel.cluster import cluster_client

from .common import DATA, machine, median_ms, replicated, timed, workdir

SMALL = DATA / "mzdata" / "small.mzML"


def pyteomics_iterate(path: Path) -> int:
    return sum(1 for _ in mzml.MzML(str(path)))


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


def pyteomics_reads(path: Path, picks: list[int]) -> float:
    reader = mzml.PreIndexedMzML(str(path))
    samples = []
    for i in picks:
        start = time.perf_counter()
        reader.get_by_index(i)
        samples.append(time.perf_counter() - start)
    return median_ms(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=30)
    args = parser.parse_args()
    source = replicated(SMALL, args.copies)
    out = workdir()
    size = source.stat().st_size
    print(
        f"input: {source.name}, {size / 1e6:.1f} MB, small.mzML x{args.copies} "
        f"(synthetic by replication); {machine()}"
    )

    t_parse, n = timed(pyteomics_iterate, source)
    t_inline, result = timed(
        convert,
        source,
        out / "single.mzpeak",
        ConvertOptions(overwrite=True),
        cluster=ClusterOptions(cluster="inline"),
    )
    t_cluster, _ = timed(
        convert,
        source,
        out / "cluster.mzpeak",
        ConvertOptions(overwrite=True),
        cluster=ClusterOptions(workers=2, dashboard=False),
    )
    with cluster_client(ClusterOptions(workers=2, dashboard=False)) as client:
        t_running, _ = timed(
            convert, source, out / "running.mzpeak", ConvertOptions(overwrite=True), client=client
        )
    print(f"pyteomics iterate+decode       {t_parse:7.2f} s  ({n} spectra)")
    print(f"convert, one process (inline)  {t_inline:7.2f} s  ratio {t_inline / t_parse:.2f}")
    print(
        f"convert, LocalCluster 2 workers{t_cluster:7.2f} s  ratio {t_cluster / t_parse:.2f} "
        "(includes starting the cluster)"
    )
    print(
        f"convert, running 2-worker cluster{t_running:5.2f} s  ratio {t_running / t_parse:.2f} "
        "(cluster started beforehand)"
    )
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

    picks = random.Random(7).sample(range(n), 200)
    ours = random_reads(out / "single.mzpeak", n, picks)
    theirs = pyteomics_reads(source, picks)
    print(
        f"random spectrum by index        archive {ours:.2f} ms  pyteomics indexed mzML "
        f"{theirs:.2f} ms  (median of 200; ratio {theirs / ours:.1f}x faster)"
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
