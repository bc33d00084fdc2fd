"""The partitions' work alone, on one process and then on two, with no Dask and no coordinator:
what this machine's cores give that work, measured beside a conversion's speedup.

At the same moment, a run converted on two workers cannot gain more over one than its
partitions encoded and written by two plain processes gain over one. On a shared machine that
ratio is below 2 (the two cores are not always two whole cores) and moves from one moment to
the next, so it is measured in the same run as the conversion (a minute apart from it: the two
figures can cross), in rounds that alternate one process and two:

* the run is planned once; two processes are started (spawned, with the workers' environment)
  and each encodes every partition once, unmeasured;
* a round hands the partitions, in order, to a queue that one process empties (one round) or
  both (the next), as a Dask worker takes its next task when it is free; each partition is
  encoded and written to a file (:func:`~mzpeak_dask.parallel.tasks.write_partition_file`, the task
  a partition is on a cluster), then the file is removed;
* the ratio of a round pair is the one-process seconds over the two-process seconds.

    python -m tests.benchmarks.bare_partitions [ROUNDS]
"""

from __future__ import annotations

import json
import multiprocessing
import os
import queue
import shutil
import statistics
import sys
import time
from pathlib import Path

from .common import DATA, replicated, workdir

ROUNDS = 5  # round pairs (one process, then two), after one unmeasured pair


def _work(plan, offsets: list, folder: str, orders, todo, done) -> None:
    """A process's loop: at each order, encode the partitions taken from ``todo`` until it
    gives None, then report its seconds."""
    from mzpeak_dask.parallel.tasks import write_partition_file

    while orders.get() is not None:
        start = time.perf_counter()
        while (n := todo.get()) is not None:
            path, _, _ = write_partition_file(folder, plan.partitions[n], plan.spec, offsets[n])
            os.unlink(path)
        done.put(time.perf_counter() - start)


def _report(done, processes: list) -> float:
    """The next process's seconds; an error if one of ``processes`` ended instead."""
    while True:
        try:
            return done.get(timeout=5)
        except queue.Empty:
            ended = [p.exitcode for p in processes if not p.is_alive()]
            if ended:
                raise RuntimeError(
                    f"a process encoding partitions ended (exit code {ended[0]})"
                ) from None


def measure(source: Path, rounds: int = ROUNDS) -> dict:
    """One process, then two, ``rounds`` times over (after one pair not measured): their
    seconds and ratios."""
    from mzpeak_dask import ConvertOptions
    from mzpeak_dask.encode.plan import plan_run
    from mzpeak_dask.parallel.tasks import planned_offsets
    from mzpeak_dask.parallel.worker_env import WORKER_ENVIRON

    folder = workdir() / "bare-partitions"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    plan = plan_run(source, folder, ConvertOptions())
    offsets = planned_offsets(plan)
    os.environ.update(WORKER_ENVIRON)  # spawned processes start with it, as workers do
    context = multiprocessing.get_context("spawn")
    todo, done = context.Queue(), context.Queue()
    orders = [context.Queue() for _ in range(2)]
    processes = [
        context.Process(target=_work, args=(plan, offsets, str(folder), o, todo, done))
        for o in orders
    ]
    for process in processes:
        process.start()

    def round_of(workers: int) -> float:
        start = time.perf_counter()
        for n in range(len(plan.partitions)):
            todo.put(n)
        for k in range(workers):
            todo.put(None)
            orders[k].put(True)
        for _ in range(workers):
            _report(done, processes)
        return time.perf_counter() - start

    try:
        round_of(2)  # each process imports, sets its heap, encodes its first partitions
        round_of(1)
        pairs = [(round_of(1), round_of(2)) for _ in range(rounds)]
    finally:
        for o in orders:
            o.put(None)
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "partitions": len(plan.partitions),
        "one": [a for a, _ in pairs],
        "two": [b for _, b in pairs],
        "ratios": [a / b for a, b in pairs],
        "median": statistics.median(a / b for a, b in pairs),
    }


def describe(bare: dict) -> str:
    ratios = ", ".join(f"{r:.2f}" for r in bare["ratios"])
    return (
        f"the {bare['partitions']} partitions' work alone, no Dask, 1 -> 2 processes: "
        f"{bare['median']:.2f}, the median of {len(bare['ratios'])} round pairs ({ratios}; "
        f"1 process {statistics.median(bare['one']):.2f} s, "
        f"2 processes {statistics.median(bare['two']):.2f} s)"
    )


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS
    result = measure(replicated(DATA / "mzdata" / "small.mzML", 30), rounds)
    print(describe(result))
    print(json.dumps(result))
