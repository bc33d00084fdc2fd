"""A process that encodes partitions keeps the C heap blocks a partition frees and reuses them
for the next: encoding the same partition again takes almost no fresh pages from the kernel
(thousands of minor page faults for this partition without it, each a zero-filled page), and
Arrow allocates from that heap. Measured in a fresh process, whose heap no earlier test has
set."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import BUNDLED, DATA
from .helpers.replicate import replicate

RUN = DATA / "openms" / "FeatureFinderMetaboIdent_1_input.mzML"

PLANNED = """
import resource, sys, tempfile
from pathlib import Path
from mzpeak_dask import ConvertOptions
from mzpeak_dask.encode import encode_partition
from mzpeak_dask.partition import plan_run
from mzpeak_dask.readers import SPECTRA

def first_spectra(path):
    \"\"\"The plan of the run at ``path`` and its first partition of spectra.\"\"\"
    with tempfile.TemporaryDirectory() as staging:
        plan = plan_run(Path(path), Path(staging), ConvertOptions())
    return plan, next(p for p in plan.partitions if p.items.kind == SPECTRA)
"""  # what both scripts below start with

SCRIPT = (
    PLANNED
    + """
import pyarrow as pa
from mzpeak_dask.heap import keep_freed_blocks

plan, part = first_spectra(sys.argv[1])
faults = []
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    out = encode_partition(part, plan.spec)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
pool = pa.default_memory_pool().backend_name
print(sum(out.points.values()), faults[-1], keep_freed_blocks(), pool)
"""
)


@pytest.mark.slow  # a fresh process encodes a partition of a real run three times
def test_encoding_again_reuses_the_freed_heap() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(RUN)], capture_output=True, text=True, check=True
    )
    points, faults, kept, pool = done.stdout.split()
    assert int(points) > 100_000  # a real partition: about 2 MB of points per array
    if sys.platform.startswith("linux") and kept == "True":
        assert int(faults) < 300, faults
        assert pool == "system"  # Arrow's buffers from the same heap, not mimalloc's


WORKERS = """
import sys
import pyarrow as pa
from mzpeak_dask import ClusterOptions
from mzpeak_dask.heap import keep_freed_blocks
from mzpeak_dask.parallel.cluster import cluster_client

def state():
    return pa.default_memory_pool().backend_name

def worker_state():
    return f"{state()} {keep_freed_blocks()}"

if __name__ == "__main__":
    with cluster_client(ClusterOptions(workers=1, dashboard=False)) as client:
        print(state(), *client.run(worker_state).values())
"""


@pytest.mark.cluster
@pytest.mark.slow  # a fresh coordinator starts its own LocalCluster
def test_a_local_worker_has_its_heap_set_before_its_first_task(tmp_path) -> None:
    """In a fresh coordinator (whose own heap is untouched), a worker that has run no task
    allocates Arrow's buffers from the heap it keeps."""
    script = tmp_path / "workers.py"
    script.write_text(WORKERS)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, timeout=120
    )
    coordinator, worker, kept = done.stdout.split()
    assert coordinator != "system"  # nothing set it here
    if sys.platform.startswith("linux") and kept == "True":
        assert worker == "system"


ON_WORKERS = (
    PLANNED
    + """
from mzpeak_dask import ClusterOptions
from mzpeak_dask.parallel.cluster import cluster_client

WHO = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)  # the task's thread (Linux)

def faults(part, spec):
    before = resource.getrusage(WHO).ru_minflt
    encode_partition(part, spec)
    return resource.getrusage(WHO).ru_minflt - before

if __name__ == "__main__":
    plan, part = first_spectra(sys.argv[1])
    with cluster_client(ClusterOptions(workers=2, dashboard=False)) as client:
        last = []
        for worker in client.scheduler_info()["workers"]:
            runs = [client.submit(faults, part, plan.spec, workers=[worker], pure=False)
                    for _ in range(4)]
            last.append(client.gather(runs)[-1])
    print(*last)
"""
)


@pytest.mark.cluster
@pytest.mark.slow  # each worker of a LocalCluster encodes a partition again
def test_each_worker_encoding_again_reuses_the_freed_heap(tmp_path) -> None:
    """On every worker of a LocalCluster too: a worker's task thread allocates from a glibc
    thread arena, whose heaps were given back to the kernel as a partition freed them (about
    3,700 page faults each time this partition was encoded again, on each worker) until the
    top pad kept them (250-500)."""
    script = tmp_path / "workers.py"
    script.write_text(ON_WORKERS)
    source = tmp_path / "small_x8.mzML"  # 27 MB: partitions of about 500,000 points
    replicate(BUNDLED / "small.mzML", source, 8)
    done = subprocess.run(
        [sys.executable, str(script), str(source)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    faults = [int(n) for n in done.stdout.split()]
    assert len(faults) == 2
    if sys.platform.startswith("linux"):
        assert max(faults) < 1500, faults
