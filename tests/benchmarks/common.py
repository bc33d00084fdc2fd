"""Shared helpers of the benchmark scripts (run them with ``python -m tests.benchmarks.NAME``)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
WORK = ROOT / "bench-output"


def workdir() -> Path:
    WORK.mkdir(exist_ok=True)
    return WORK


def replicated(source: Path, copies: int) -> Path:
    """``source`` replicated ``copies`` times (cached in bench-output/: written under another
    name and renamed, so an interrupted benchmark leaves no truncated copy to be reused)."""
    from ..helpers.replicate import replicate

    target = workdir() / f"{source.name.split('.')[0]}_x{copies}.mzML"
    if not target.exists():
        partial = target.with_name(target.name + ".partial")
        replicate(source, partial, copies)
        os.replace(partial, target)
    return target


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return time.perf_counter() - start, value


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def in_subprocess(module: str, *args: str) -> dict:
    """Run ``python -m module args`` and parse the JSON it prints last (fresh process: clean
    peak-memory figures and no warm caches)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{module} {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{os.cpu_count()} cores, load average {load:.2f} at start"


def warm_cluster_run(source: str, workers: int, reader: str | None = None) -> dict:
    """A conversion of ``source`` on a LocalCluster of ``workers`` started beforehand, its
    workers warmed (the vocabulary read, the ``reader`` module imported): wall seconds,
    spectra, CPU seconds of this process (the coordinator), of the workers and of the busiest
    one (on a loaded machine, what the cluster would take with a core each, where wall time
    cannot say), and the peak RSS (MB) of this process and of the largest worker."""
    from mzpeak_dask import ClusterOptions, ConvertOptions, convert
    from mzpeak_dask.parallel.cluster import cluster_client

    with cluster_client(ClusterOptions(workers=workers, dashboard=False)) as client:
        client.run(lambda: __import__("mzpeak_dask.format.cv").format.cv.psi_ms() and None)
        if reader:
            client.run(lambda: __import__(reader) and None)
        before, cpu0 = client.run(_usage), _usage()[0]
        start = time.perf_counter()
        result = convert(
            source,
            str(workdir() / f"warm_{Path(source).suffix[1:]}_workers{workers}.mzpeak"),
            ConvertOptions(overwrite=True),
            client=client,
        )
        seconds = time.perf_counter() - start
        (cpu1, coordinator_rss), after = _usage(), client.run(_usage)
    spent = {w: after[w][0] - before[w][0] for w in after}
    return {
        "seconds": seconds,
        "spectra": result.spectra,
        "coordinator_cpu": cpu1 - cpu0,
        "worker_cpu": sum(spent.values()),
        "busiest_worker_cpu": max(spent.values()),
        "coordinator_rss_mb": coordinator_rss,
        "worker_rss_mb": max(after[w][1] for w in after),
    }


def _usage() -> tuple[float, int]:
    """CPU seconds and peak RSS (MB) of this process (run on each worker, too)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024
