"""Where work runs when the user leaves it to us (``cluster = "auto"``, the default): in this
process when the work is too small for a LocalCluster to pay for its start, else on a
LocalCluster of a worker per core. Decided once per call, from the size of its inputs, by
:func:`resolve`; a kind of cluster, a worker count or a scheduler the user names is kept.

The figures: one process converts about 35 MB of mzML a second; each worker adds about 0.8 of a
process; a LocalCluster's spawned workers take about 1 s to start. They come from
``tests/benchmarks/bench_single_run.py``, which prints them (see the performance page), and put
the choice at about 93 MB on 2 cores and 41 MB on 8. Compressed inputs count as four times
their size (real gzip and bzip2 runs expand 1.5 to 6 times).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..errors import MzPeakDaskError
from ..options import ClusterOptions
from ..storage.inputs import input_size
from ..support.pathtext import human_size, plural

CLUSTER_START_SECONDS = 1.0
INLINE_BYTES_PER_SECOND = 35e6
WORKER_SPEEDUP = 0.8
COMPRESSED_EXPANSION = 4


def work_bytes(inputs: Iterable[Path]) -> int:
    """The bytes of mzML-equivalent work in ``inputs`` (compressed ones weighted up)."""
    total = 0
    for path in inputs:
        try:
            size = input_size(path)
        except (OSError, MzPeakDaskError):
            continue  # a missing input fails with its own error when converted
        compressed = Path(path).name.lower().endswith((".gz", ".bz2"))
        total += size * COMPRESSED_EXPANSION if compressed else size
    return total


def cluster_pays(size: int, workers: int) -> bool:
    """Whether ``workers`` local processes convert ``size`` bytes sooner than this process,
    their start included: ``size / rate > start + size / (rate * speedup)``."""
    speedup, start = WORKER_SPEEDUP * workers, CLUSTER_START_SECONDS * INLINE_BYTES_PER_SECOND
    return speedup > 1 and size > start / (1 - 1 / speedup)


def resolve(options: ClusterOptions, size: int) -> ClusterOptions:
    """``options`` with ``cluster = "auto"`` made concrete for ``size`` bytes of work: a
    LocalCluster when a worker count or nothing but the size says so, else inline."""
    if options.cluster != "auto":
        return options
    if options.scheduler or options.workers or cluster_pays(size, options.worker_count()):
        return options.updated(cluster="local")
    return options.updated(cluster="inline")


def describe(options: ClusterOptions, size: int | None = None) -> str:
    """A line saying where the work runs (and, given, how much of it there is)."""
    if options.scheduler:
        line = f"running on the Dask scheduler at {options.scheduler}"
    elif options.cluster == "inline":
        line = "running in-process"
    elif options.cluster == "local":
        line = f"starting a LocalCluster of {plural(options.worker_count(), 'worker')}"
    else:
        line = f"starting a {options.cluster} cluster"
    return line if size is None else f"{line} ({human_size(size)} input)"


__all__ = ["cluster_pays", "describe", "resolve", "work_bytes"]
