"""Scale-out benchmark: how much of a run the coordinator does, what crosses from the workers,
and how far adding workers carries.

    python -m tests.benchmarks.bench_scale

Printed side by side, measured in this one run:

* the coordinator's **marginal CPU share** of a batch: the real runs of ../shared/data (N runs,
  the broken ones left out) converted by ``run_batch``, then the same tree twice (2N runs); the
  share is (coordinator CPU of 2N - of N) / (that + workers' CPU of 2N - of N), so start-up and
  fixed costs cancel (three N, 2N pairs in one cluster after a batch not measured, the median
  printed with the others, and the whole batches' shares with their fixed costs beside); and
  the share for **one ~100 MB
  run** (mzdata/small.mzML replicated x30: synthetic by replication);
* **handoff bytes / output bytes**: what crosses from the workers to the coordinator (result
  files it loads, and the pickled size of every result it collects) over the size of the
  archives. The workers see the output folder here, so they finish each run: the partitions'
  parts go to the run's staging folder and are read by the worker that finishes the run, and
  the coordinator receives paths, counts and the run's result;
* **files/h and MB/s** of the N-run batch, and the 100 MB run's seconds, at 1 and 2 workers:
  its first conversion on a new cluster, and five more on that cluster (their median);
* the **speedup 1 -> 2 workers** (the goal's figure): a 1-worker and a 2-worker cluster
  running side by side, the 100 MB run converted on each in turn, five rounds, the cluster
  that goes first alternating (:func:`measure_speedup`); the median of the rounds' ratios,
  beside the same run's partitions encoded and written by one plain process and then by two,
  with no Dask (:mod:`.bare_partitions`): what two of this machine's cores give that work in
  this run;
* a **projection** to 8, 64, 256 and 1024 workers from the measured per-task costs.
* the coordinator's CPU per task when **100, 400 and 1,600 tasks are in flight** together and
  each is collected as it ends: by the executor's wait (a queue the tasks' ends are put on),
  beside one ``distributed.wait`` over all tasks in flight per ended task.

How CPU is measured: the coordinator is this benchmark's subprocess, which also runs the
LocalCluster's scheduler (as ``mzpeak-dask convert`` does): its CPU is
``resource.getrusage(RUSAGE_SELF)``. The workers are separate processes (children of the nanny
processes, which are children of this one): ``RUSAGE_CHILDREN`` would only count them once they
exit, so each worker reports its own ``RUSAGE_SELF`` through ``client.run`` before and after the
measured work, and the differences are summed. The nannies (idle supervisors) are not counted.
Each measurement runs in a fresh process with a cluster started before timing.

The projection: a batch run of the measured average size costs the workers
``worker CPU per MB x MB``; the coordinator ``a + b x row groups`` (``a`` per run and ``b`` per
row group, solved from the batch and the 100 MB run, with the scheduler's part taken out); the
scheduler ``s x tasks per run`` (``s`` from a burst of empty tasks); storage moves input + output
bytes at a stated bandwidth. Throughput at W workers is the smallest of W / worker cost,
1 / coordinator cost, 1 / scheduler cost and bandwidth / bytes; the smallest names the limit.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import resource
import shutil
import statistics
import sys
import time
import zipfile
from pathlib import Path

import pyarrow.parquet as pq

from . import bare_partitions
from .bench_batch import repository
from .common import DATA, in_subprocess, machine, replicated, workdir

MODULE = "tests.benchmarks.bench_scale"
STORAGE_GBPS = 1.0  # stated storage bandwidth for the projection (a parallel file system share)
WORKER_COUNTS = (8, 64, 256, 1024)


def _usage() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class _Meter:
    """Coordinator and worker CPU seconds, tasks submitted, and bytes crossing to the
    coordinator (``handoff``: result files it loads plus the pickled size of every result it
    collects, whose measuring CPU is taken out of the coordinator's), from ``start``."""

    def __init__(self, client):
        from mzpeak_dask.parallel import executors, handoff

        self.client = client
        self.tasks = 0
        self.handoff = 0
        self.overhead = 0.0  # coordinator CPU spent measuring
        submit, load, result = (
            executors.DaskExecutor.submit,
            handoff.load,
            executors.DaskExecutor.result,
        )
        meter = self

        def counted_submit(self, *args, **kwargs):
            meter.tasks += 1
            return submit(self, *args, **kwargs)

        def measured_load(path):
            meter.handoff += os.path.getsize(path)
            return load(path)

        def measured_result(self, task):
            value = result(self, task)
            start = _usage()
            with contextlib.suppress(Exception):
                meter.handoff += len(pickle.dumps(value, protocol=5))
            meter.overhead += _usage() - start
            return value

        executors.DaskExecutor.submit = counted_submit
        executors.DaskExecutor.result = measured_result
        handoff.load = measured_load

    def snapshot(self) -> dict:
        workers = self.client.run(_usage)
        return {
            "coordinator": _usage() - self.overhead,
            "workers": sum(workers.values()),
            "tasks": self.tasks,
            "handoff": self.handoff,
            "time": time.perf_counter(),
        }


def _delta(after: dict, before: dict) -> dict:
    return {k: after[k] - before[k] for k in after}


def _cluster(workers: int):
    from mzpeak_dask import ClusterOptions
    from mzpeak_dask.parallel.cluster import cluster_client

    return cluster_client(ClusterOptions(workers=workers, dashboard=False))


def _warm(client) -> None:
    client.run(lambda: __import__("mzpeak_dask.format.cv").format.cv.psi_ms() and None)


def _archives(folder: Path) -> tuple[int, int]:
    """Bytes of the archives under ``folder`` and row groups of their data members."""
    total = groups = 0
    for path in folder.rglob("*.mzpeak"):
        total += path.stat().st_size
        with zipfile.ZipFile(path) as z:
            for name in z.namelist():
                if name.endswith(("_data.parquet", "_peaks.parquet")):
                    with z.open(name) as f:
                        groups += pq.ParquetFile(f).metadata.num_row_groups
    return total, groups


PAIRS = 3  # N then 2N, three times


def measure_batch(workers: int) -> dict:
    """The N-run tree, then the tree twice, PAIRS times over in one cluster (a pair's marginal
    coordinator CPU is a small difference of two larger figures: one pair is noise-prone),
    after one N-run batch not measured: the first batch of a process pays once for what the
    later ones reuse (code paths run for the first time, the state database's first open),
    which made the first pair's N cost the larger and its marginal share negative."""
    from mzpeak_dask.batch.runner import run_batch
    from mzpeak_dask.options import BatchOptions

    tree = repository()
    twice = workdir() / "scale-tree-x2"
    if not twice.exists():
        shutil.copytree(tree, twice / "a")
        shutil.copytree(tree, twice / "b")
    out: dict[str, list] = {"n": [], "2n": []}
    with _cluster(workers) as client:
        _warm(client)
        meter = _Meter(client)
        warm_up = workdir() / f"scale-batch-warm-up-{workers}"
        shutil.rmtree(warm_up, ignore_errors=True)
        run_batch(tree, warm_up, batch=BatchOptions(), client=client)
        for label, source in (("n", tree), ("2n", twice)) * PAIRS:
            target = workdir() / f"scale-batch-{label}-{workers}"
            shutil.rmtree(target, ignore_errors=True)
            before = meter.snapshot()
            run_batch(source, target, batch=BatchOptions(), client=client)
            cost = _delta(meter.snapshot(), before)
            doc = json.loads((target / "batch_report.json").read_text())
            converted = [f for f in doc["files"] if f["status"] == "converted"]
            output_bytes, groups = _archives(target)
            cost |= {
                "files": len(converted),
                "failed": doc["summary"]["failed"],
                "input_mb": sum(f["input_bytes"] for f in converted) / 1e6,
                "output_bytes": output_bytes,
                "row_groups": groups,
            }
            out[label].append(cost)
    return out


def _timeline(stream: list[dict], start: float, end: float) -> dict:
    """From a task stream: per kind of task, its count and compute seconds; the seconds during
    which exactly one task ran (the serial part), by kind; and those during which none did."""
    from dask.utils import key_split

    kinds: dict[str, list] = {}
    events = []
    for task in stream:
        kind = key_split(task["key"])
        for step in task["startstops"]:
            if step["action"] == "compute":
                entry = kinds.setdefault(kind, [0, 0.0])
                entry[0] += 1
                entry[1] += step["stop"] - step["start"]
                events += [(step["start"], 1, kind), (step["stop"], -1, kind)]
    alone: dict[str, float] = {}
    idle, running, last = 0.0, [], start
    for at, change, kind in sorted(events):
        span = max(0.0, at - last)
        if not running:
            idle += span
        elif len(running) == 1:
            alone[running[0]] = alone.get(running[0], 0.0) + span
        last = at
        if change == 1:
            running.append(kind)
        else:
            running.remove(kind)
    idle += max(0.0, end - last)
    return {"kinds": kinds, "alone": alone, "idle": idle}


REPEATS = 5  # conversions of the 100 MB run after the first, on the same cluster


NANNY_MONITOR = "distributed.worker.memory.monitor-interval"  # 1 s in the clusters started here


def measure_run(source: str, workers: int, dask_monitor: bool = False) -> dict:
    """The 100 MB run converted on a new cluster (the costs, the timeline: the first
    conversion), then REPEATS times more on that cluster (their seconds and CPU: the first
    conversion of a cluster also pays its workers' first use, and one conversion is
    noise-prone). ``dask_monitor``: the nannies read their workers' memory every 100 ms, as
    Dask's default is, to measure what :data:`~mzpeak_dask.parallel.cluster.QUIET` gains."""
    from distributed import get_task_stream

    from mzpeak_dask import ConvertOptions, convert
    from mzpeak_dask.parallel import cluster

    if dask_monitor:
        del cluster.QUIET[NANNY_MONITOR]
    output = workdir() / f"scale-run-{workers}.mzpeak"
    with _cluster(workers) as client:
        _warm(client)
        meter = _Meter(client)
        before = meter.snapshot()
        start = time.time()
        with get_task_stream(client) as stream:
            result = convert(source, output, ConvertOptions(overwrite=True), client=client)
        cost = _delta(meter.snapshot(), before)
        cost["timeline"] = _timeline(stream.data, start, time.time())
        cost["repeats"] = []
        before = meter.snapshot()
        for _ in range(REPEATS):
            start = time.perf_counter()
            convert(source, output, ConvertOptions(overwrite=True), client=client)
            cost["repeats"].append(time.perf_counter() - start)
        cost["repeats_cpu"] = _delta(meter.snapshot(), before)
    folder = workdir() / f"scale-run-{workers}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    output.rename(folder / output.name)
    cost["output_bytes"], cost["row_groups"] = _archives(folder)
    cost["input_mb"] = result.input_bytes / 1e6
    return cost


def measure_speedup(source: str) -> dict:
    """The 100 MB run's seconds on a 1-worker and a 2-worker cluster running side by side:
    one conversion on each not measured (their workers' first use), then REPEATS rounds of
    one conversion on each, the cluster that goes first alternating. The two series share
    the machine's state at each moment: measured on separate clusters one after the other,
    a drift of this machine's speed between the two moved the ratio (2.03 in one run, beside
    bare partitions at 1.77)."""
    from mzpeak_dask import ConvertOptions, convert

    outputs = {w: workdir() / f"scale-speedup-{w}.mzpeak" for w in (1, 2)}
    seconds: dict[int, list[float]] = {1: [], 2: []}
    with _cluster(1) as one, _cluster(2) as two:
        clients = {1: one, 2: two}
        for w, client in clients.items():
            _warm(client)
            convert(source, outputs[w], ConvertOptions(overwrite=True), client=client)
        for round_ in range(REPEATS):
            for w in (1, 2) if round_ % 2 == 0 else (2, 1):
                start = time.perf_counter()
                convert(source, outputs[w], ConvertOptions(overwrite=True), client=clients[w])
                seconds[w].append(time.perf_counter() - start)
    for path in outputs.values():
        path.unlink()
    return {str(w): s for w, s in seconds.items()}


def _nothing(x):
    return x


def measure_scheduler(tasks: int = 3000) -> dict:
    """Coordinator CPU per task for tasks that do nothing (client and scheduler, one process)."""
    with _cluster(2) as client:
        _warm(client)
        client.gather(client.map(_nothing, range(200), pure=False))  # warm the scheduler
        cpu, start = _usage(), time.perf_counter()
        for k in range(0, tasks, 100):
            client.gather(client.map(_nothing, range(k, k + 100), pure=False))
        return {
            "cpu_per_task": (_usage() - cpu) / tasks,
            "wall_per_task": (time.perf_counter() - start) / tasks,
        }


IN_FLIGHT = (100, 400, 1600)


def measure_in_flight() -> dict:
    """Coordinator CPU per task when ``n`` tasks that do nothing are in flight together and
    each is collected as it ends: by the executor's :meth:`next_done` (a queue its tasks'
    ends are put on), and, beside it, by one ``distributed.wait`` over all still in flight per
    ended task (the coordinator's wait before it), whose cost grows with their number."""
    from distributed import wait

    from mzpeak_dask.parallel.executors import DaskExecutor

    def by_executor(client, n: int) -> None:
        executor = DaskExecutor(client, 120)
        todo = [executor.submit(k, _nothing, k) for k in range(n)]
        while todo:
            task = executor.next_done(todo)
            todo.remove(task)
            executor.release(task)

    def by_wait(client, n: int) -> None:
        todo = [client.submit(_nothing, k, pure=False) for k in range(n)]
        while todo:
            done = next((f for f in todo if f.done()), None)
            if done is None:
                wait(todo, timeout=120, return_when="FIRST_COMPLETED")
                done = next(f for f in todo if f.done())
            todo.remove(done)
            done.release()

    out: dict[str, dict] = {"executor": {}, "wait": {}}
    with _cluster(2) as client:
        _warm(client)
        by_executor(client, 200)  # warm the scheduler
        for n in IN_FLIGHT:
            for name, collect in (("executor", by_executor), ("wait", by_wait)):
                cpu = _usage()
                collect(client, n)
                out[name][str(n)] = (_usage() - cpu) / n
    return out


def _pairs(batch: dict) -> list[tuple[dict, dict]]:
    """The (N, 2N) measurements in pairs, ordered by their marginal coordinator share."""
    pairs = list(zip(batch["n"], batch["2n"], strict=True))
    return sorted(pairs, key=lambda pair: _share(_delta(pair[1], pair[0])))


def _share(cost: dict) -> float:
    return cost["coordinator"] / (cost["coordinator"] + cost["workers"])


def main() -> None:
    modes = ("batch", "run", "scheduler", "bare", "in-flight", "speedup")
    if len(sys.argv) >= 3 and sys.argv[1] in modes:
        if sys.argv[1] == "bare":
            print(json.dumps(bare_partitions.measure(Path(sys.argv[2]))))
        elif sys.argv[1] == "speedup":
            print(json.dumps(measure_speedup(sys.argv[2])))
        elif sys.argv[1] == "in-flight":
            print(json.dumps(measure_in_flight()))
        elif sys.argv[1] == "batch":
            print(json.dumps(measure_batch(int(sys.argv[2]))))
        elif sys.argv[1] == "run":
            monitor = sys.argv[4:] == ["dask-monitor"]
            print(json.dumps(measure_run(sys.argv[2], int(sys.argv[3]), monitor)))
        else:
            print(json.dumps(measure_scheduler(int(sys.argv[2]))))
        return
    print(f"machine: {machine()}")
    big = replicated(DATA / "mzdata" / "small.mzML", 30)
    print(
        f"one run: {big.name}, {big.stat().st_size / 1e6:.0f} MB "
        "(mzdata/small.mzML x30, synthetic by replication)"
    )
    batches = {w: in_subprocess(MODULE, "batch", str(w)) for w in (1, 2)}
    runs = {w: in_subprocess(MODULE, "run", str(big), str(w)) for w in (1, 2)}
    monitored = in_subprocess(MODULE, "run", str(big), "2", "dask-monitor")
    speedup = in_subprocess(MODULE, "speedup", str(big))
    bare = in_subprocess(MODULE, "bare", str(big))
    sched = in_subprocess(MODULE, "scheduler", "3000")
    report(batches, runs, bare, sched, monitored, speedup)
    flight = in_subprocess(MODULE, "in-flight", "-")
    print(
        "tasks in flight, each collected as it ends, coordinator CPU per task: "
        + "; ".join(
            f"{n}: {flight['executor'][str(n)] * 1e3:.1f} ms (one distributed.wait over all "
            f"per ended task: {flight['wait'][str(n)] * 1e3:.1f} ms)"
            for n in IN_FLIGHT
        )
    )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


def report(
    batches: dict, runs: dict, bare: dict, sched: dict, monitored: dict, speedup: dict
) -> None:
    pairs = _pairs(batches[2])
    n, n2 = pairs[len(pairs) // 2]
    marginal = _delta(
        {k: n2[k] for k in ("coordinator", "workers")},
        {k: n[k] for k in ("coordinator", "workers")},
    )
    print(f"batch: N = {n['files']} real runs ({n['input_mb']:.1f} MB), 2N = {n2['files']} runs")
    shares = ", ".join(f"{_share(_delta(b, a)):.1%}" for a, b in pairs)
    print(
        f"  marginal coordinator CPU share, 2 workers: {_share(marginal):.1%}, the median of "
        f"{len(pairs)} pairs after a warm-up batch ({shares}; coordinator "
        f"+{marginal['coordinator']:.2f} s for workers +{marginal['workers']:.2f} s; "
        "goal <= 3 %, issue 35)"
    )
    print(
        "  whole-batch coordinator CPU share, 2 workers, fixed costs included: "
        f"N {_share(n):.1%} ({n['coordinator']:.2f} s vs {n['workers']:.2f} s), "
        f"2N {_share(n2):.1%} ({n2['coordinator']:.2f} s vs {n2['workers']:.2f} s)"
    )
    for w in (1, 2):
        print(
            f"  one 100 MB run, {w} worker{'s' if w > 1 else ' '}: coordinator share "
            f"{_share(runs[w]):.1%} ({runs[w]['coordinator']:.2f} s vs "
            f"{runs[w]['workers']:.2f} s), {runs[w]['time']:.1f} s"
        )
    steady = {w: _share(runs[w]["repeats_cpu"]) for w in (1, 2)}
    print(
        f"  the {REPEATS} conversions after it on that cluster: coordinator share "
        f"{steady[1]:.1%} at 1 worker, {steady[2]:.1%} at 2"
    )
    print(
        "  the same at 2 workers, the nannies reading their workers' memory every 100 ms "
        f"(Dask's default; 1 s here): first conversion {_share(monitored):.1%}, the "
        f"{REPEATS} after it {_share(monitored['repeats_cpu']):.1%}"
    )
    later = {w: statistics.median(runs[w]["repeats"]) for w in (1, 2)}
    side = {w: speedup[str(w)] for w in (1, 2)}
    ratios = [a / b for a, b in zip(side[1], side[2], strict=True)]
    print(
        f"  one-run goal <= 2 % (issue 35); speedup 1 -> 2 workers (goal >= 1.7), clusters "
        f"side by side: {statistics.median(ratios):.2f}, the median of {REPEATS} alternating "
        f"rounds ({', '.join(f'{r:.2f}' for r in ratios)}; 1 worker "
        f"{statistics.median(side[1]):.2f} s, 2 workers {statistics.median(side[2]):.2f} s)"
    )
    print(
        f"    on the clusters above, one after the other: first conversion "
        f"{runs[1]['time'] / runs[2]['time']:.2f}, the median of the {REPEATS} after it "
        f"{later[1] / later[2]:.2f} ({later[1]:.2f} s vs {later[2]:.2f} s)"
    )
    print(
        f"    beside it, {bare_partitions.describe(bare)}: the conversion's side-by-side "
        f"speedup is {statistics.median(ratios) / bare['median']:.0%} of it"
    )
    for w in (1, 2):
        timeline = runs[w]["timeline"]
        tasks = ", ".join(f"{k} {n} x {s:.2f} s" for k, (n, s) in timeline["kinds"].items())
        alone = ", ".join(f"{k} {s:.2f} s" for k, s in timeline["alone"].items() if s >= 0.005)
        print(f"  timeline at {w} worker{'s' if w > 1 else ' '}: {tasks}")
        if w > 1:
            print(f"    one task alone: {alone}; no task: {timeline['idle']:.2f} s")
    handed = n["handoff"] + runs[2]["handoff"]
    output = n["output_bytes"] + runs[2]["output_bytes"]
    print(
        f"handoff bytes / output bytes: batch {n['handoff'] / n['output_bytes']:.2f}, "
        f"100 MB run {runs[2]['handoff'] / runs[2]['output_bytes']:.2f}, "
        f"together {handed / output:.2f} (goal <= 1.0, was about 1.7x the input)"
    )
    for w in (1, 2):
        b = batches[w]["n"][0]
        print(
            f"  batch at {w} worker{'s' if w > 1 else ' '}: "
            f"{b['files'] / b['time'] * 3600:,.0f} files/h, "
            f"{b['input_mb'] / b['time']:.2f} MB/s ({b['time']:.1f} s, {b['failed']} failed)"
        )
    project(dict(zip(("n", "2n"), pairs[len(pairs) // 2], strict=True)), runs[2], sched)


def project(batch: dict, run: dict, sched: dict) -> None:
    """Throughput at more workers from the measured per-task costs."""
    s = sched["cpu_per_task"]
    n, n2 = batch["n"], batch["2n"]
    m = _delta(n2, n)  # the marginal N runs
    runs_n = n2["files"] - n["files"]
    # coordinator CPU without the scheduler's share: a per run + b per row group, from the
    # marginal batch and the one large run (one run, many row groups)
    c_batch = m["coordinator"] - s * m["tasks"]
    c_run = run["coordinator"] - s * run["tasks"]
    rg_batch, rg_run = m["row_groups"], run["row_groups"]
    b = max(0.0, (c_run - c_batch / runs_n) / max(1, rg_run - rg_batch / runs_n))
    a = max(0.0, (c_batch - b * rg_batch) / runs_n)
    worker_per_mb = m["workers"] / m["input_mb"]
    mb_per_run = m["input_mb"] / runs_n
    rg_per_run = rg_batch / runs_n
    tasks_per_run = m["tasks"] / runs_n
    bytes_per_run = (m["input_mb"] * 1e6 + m["output_bytes"]) / runs_n
    print(
        f"per-task costs: coordinator {a * 1e3:.1f} ms/run + {b * 1e3:.2f} ms/row group; "
        f"scheduler {s * 1e3:.2f} ms/task ({tasks_per_run:.2f} tasks/run); "
        f"workers {worker_per_mb:.2f} CPU s/MB; a batch run: {mb_per_run:.2f} MB, "
        f"{rg_per_run:.1f} row groups"
    )
    limits = {
        "coordinator": 1 / max(1e-9, a + b * rg_per_run),
        "scheduler": 1 / max(1e-9, s * tasks_per_run),
        f"storage at {STORAGE_GBPS:g} GB/s": STORAGE_GBPS * 1e9 / bytes_per_run,
    }
    ceiling = min(limits.values()) * worker_per_mb * mb_per_run
    print(
        "  ceilings: "
        + ", ".join(f"{name} {rate * 3600:,.0f} files/h" for name, rate in limits.items())
    )
    print(f"  workers before the first limit: about {ceiling:,.0f}")
    for w in WORKER_COUNTS:
        rates = {"workers": w / (worker_per_mb * mb_per_run)} | limits
        limit = min(rates, key=rates.get)
        print(
            f"  {w:5d} workers: {rates[limit] * 3600:12,.0f} files/h, "
            f"{rates[limit] * mb_per_run:9,.1f} MB/s, limited by {limit}"
        )


if __name__ == "__main__":
    main()
