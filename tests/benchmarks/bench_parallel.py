"""Parallel benchmark: speedup from 1 to 2 workers, the coordinator's share of CPU time, and
peak memory of the coordinator and of one worker for a ~100 MB and a ~400 MB input.

    python -m tests.benchmarks.bench_parallel

Inputs are real runs replicated (synthetic by replication):
* speed: openms/GNPSExport_mzml1.mzML (425 centroid DDA spectra) x48 -> 20,400 spectra;
* memory: mzdata/small.mzML (profile + centroid) x30 (~100 MB) and x120 (~400 MB).
Each measurement runs in a fresh process with a fresh LocalCluster (cluster start-up is not
timed), so peak-memory figures belong to that one conversion.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .common import DATA, in_subprocess, machine, replicated, warm_cluster_run


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "run":
        print(json.dumps(warm_cluster_run(sys.argv[2], int(sys.argv[3]))))
        return
    module = "tests.benchmarks.bench_parallel"
    print(f"machine: {machine()}")
    speed = replicated(DATA / "openms" / "GNPSExport_mzml1.mzML", 48)
    print(
        f"speed input: {speed.name}, {speed.stat().st_size / 1e6:.0f} MB "
        "(GNPSExport_mzml1.mzML x48, synthetic by replication)"
    )
    one = in_subprocess(module, "run", str(speed), "1")
    two = in_subprocess(module, "run", str(speed), "2")
    print(
        f"  1 worker : {one['seconds']:6.2f} s  ({one['spectra']:,} spectra, "
        f"{one['spectra'] / one['seconds']:,.0f} spectra/s)"
    )
    print(
        f"  2 workers: {two['seconds']:6.2f} s  ({two['spectra'] / two['seconds']:,.0f} "
        f"spectra/s)   speedup {one['seconds'] / two['seconds']:.2f} (goal >= 1.6)"
    )
    for label, r in (("1 worker ", one), ("2 workers", two)):
        share = r["coordinator_cpu"] / (r["coordinator_cpu"] + r["worker_cpu"])
        print(
            f"  coordinator share of CPU time, {label}: {share:.1%} "
            f"({r['coordinator_cpu']:.2f} s of {r['coordinator_cpu'] + r['worker_cpu']:.2f} s)"
        )
    small = DATA / "mzdata" / "small.mzML"
    rows = []
    for copies in (30, 120):
        source: Path = replicated(small, copies)
        r = in_subprocess(module, "run", str(source), "2")
        rows.append((source.stat().st_size, r))
        print(
            f"memory, {source.stat().st_size / 1e6:5.0f} MB input: coordinator peak "
            f"{r['coordinator_rss_mb']} MB, worker peak {r['worker_rss_mb']} MB "
            f"({r['seconds']:.1f} s)"
        )
    (_, small_run), (_, large_run) = rows
    for key, label in (("coordinator_rss_mb", "coordinator"), ("worker_rss_mb", "worker")):
        print(
            f"  peak memory ratio 400 MB / 100 MB input, {label}: "
            f"{large_run[key] / small_run[key]:.2f} (goal <= 1.3)"
        )


if __name__ == "__main__":
    main()
