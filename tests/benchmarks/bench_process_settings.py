"""The setting a process that encodes partitions makes, measured against its absence side by
side in this one run: glibc's heap keeping freed blocks (:mod:`mzpeak_dask.support.heap`). (The
garbage collector paused during each encode was measured here too, at 0.94x the defaults on
2026-11-28, and removed.)

    python -m tests.benchmarks.bench_process_settings [ROUNDS]

Input: ../shared/data/mzdata/small.mzML replicated x30 (about 100 MB, synthetic by
replication), planned once. Each variant runs in a fresh process started as a Dask nanny
starts a worker (``MALLOC_TRIM_THRESHOLD_=65536`` in its environment), which encodes and
writes every partition (the partition task, :func:`~mzpeak_dask.parallel.tasks.
write_partition_file`) once unmeasured, then ``ROUNDS`` times; the process's CPU seconds of
each round are printed, with the medians and the ratio of each variant to the defaults.
Variants alternate round by round, so the machine's other load falls on all of them alike.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from .common import DATA, ROOT, machine, replicated, workdir

ROUNDS = 3
VARIANTS = {
    "defaults": {},
    "heap left as glibc sets it": {"heap": False},
}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def encode_all(plan_path: str, heap: bool = True) -> float:
    """In this (fresh) process: the CPU seconds of one pass over every partition."""
    import pickle

    from mzpeak_dask.parallel.tasks import planned_offsets, write_partition_file
    from mzpeak_dask.support import heap as heap_module

    if not heap:
        heap_module._kept = False  # as if glibc had refused the settings
    plan = pickle.loads(Path(plan_path).read_bytes())
    offsets = planned_offsets(plan)
    folder = Path(plan_path).parent / f"parts-{os.getpid()}"
    folder.mkdir(exist_ok=True)

    def one_pass() -> float:
        start = _cpu()
        for n, partition in enumerate(plan.partitions):
            path, _, _ = write_partition_file(str(folder), partition, plan.spec, offsets[n])
            os.unlink(path)
        return _cpu() - start

    one_pass()  # imports, first use of every code path
    seconds = one_pass()
    shutil.rmtree(folder, ignore_errors=True)
    return seconds


def _variant(plan_path: Path, settings: dict) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MALLOC_TRIM_THRESHOLD_="65536")
    code = (
        "import json, sys; from tests.benchmarks.bench_process_settings import encode_all; "
        f"print(json.dumps(encode_all({str(plan_path)!r}, **{settings!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    import pickle

    from mzpeak_dask import ConvertOptions
    from mzpeak_dask.encode.plan import plan_run

    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS
    print(f"machine: {machine()}")
    source = replicated(DATA / "mzdata" / "small.mzML", 30)
    folder = workdir() / "process-settings"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    plan = plan_run(source, folder, ConvertOptions())
    plan_path = folder / "plan.pkl"
    plan_path.write_bytes(pickle.dumps(plan))
    print(
        f"input: {source.name}, {source.stat().st_size / 1e6:.0f} MB, "
        f"{len(plan.partitions)} partitions (small.mzML x30, synthetic by replication)"
    )
    seconds: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for _ in range(rounds):
        for name, settings in VARIANTS.items():
            seconds[name].append(_variant(plan_path, settings))
    base = statistics.median(seconds["defaults"])
    for name, values in seconds.items():
        median = statistics.median(values)
        shown = ", ".join(f"{v:.2f}" for v in values)
        print(f"  {name}: CPU {median:.2f} s (rounds: {shown}); {median / base:.2f}x the defaults")
    shutil.rmtree(folder, ignore_errors=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
