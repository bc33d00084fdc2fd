"""Converting runs: plan on the coordinator, encode partitions on workers, assemble in order.

:func:`convert` converts one run; :func:`convert_many` converts several side by side on one
cluster (parallel across files and within each file). Both run on Dask by default — an embedded
LocalCluster, a running scheduler, a SLURM cluster, or a ``distributed.Client`` you pass in —
and ``ClusterOptions(cluster="inline")`` runs everything in this process without Dask. Given no
cluster, :func:`choose_cluster` decides from the size of the work whether starting a
LocalCluster pays for itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from . import vocabulary as V
from .contracts import ConversionResult, Progress
from .errors import MzPeakDaskError, OutputError
from .options import ClusterOptions, ConvertOptions
from .parallel.scheduler import run_jobs
from .staged import StagedJobs
from .storage.inputs import input_size
from .storage.urls import is_url, local_path, object_identity


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".bz2"):
        name = name.removesuffix(suffix)
    return Path(name).stem


def archive_names(inputs: list[Path]) -> list[str]:
    """``<name>.mzpeak`` for each input; inputs of the same folder that would share a name
    (``run.mzML`` beside ``run.mgf``) keep their whole file name (``run.mgf.mzpeak``)."""
    keys = [(p.parent, _stem(p)) for p in inputs]
    return [
        f"{p.name if keys.count(k) > 1 else k[1]}.mzpeak" for p, k in zip(inputs, keys, strict=True)
    ]


def is_archive_folder(path: Path) -> bool:
    """An existing folder that is an unpacked archive (named ``*.mzpeak`` or holding an
    ``mzpeak_index.json``): an output to replace, not a folder to write archives into."""
    return path.is_dir() and (path.suffix.lower() == ".mzpeak" or (path / V.INDEX_MEMBER).is_file())


# Measured on a 2-core machine (tests/benchmarks/bench_single_run.py prints these figures):
# one process converts about 35 MB of mzML a second; a worker adds about 0.8 of a process (2
# workers convert 1.6 times as fast). A LocalCluster's workers are spawned (new interpreters,
# importing distributed, numpy, pyarrow and this package): bench_single_run's cold 2-worker
# conversion spent 1.02 s starting its cluster (2026-11-28). Cold `convert`, interleaved
# rounds on the same day: FeatureFinderMetaboIdent x34 (103 MB, profile) 4.2-4.4 s on 2
# workers against 4.6-5.9 s inline; small.mzML replicated to 17, 61 and 102 MB 2.9-3.0 s,
# 3.5-4.0 s and 4.7-4.9 s on 2 workers against 1.8-1.9 s, 3.3-3.4 s and 4.3 s inline. Counting
# 1 s for the cluster puts the choice at about 93 MB on 2 cores, between the two runs of about
# 100 MB. Threads are no substitute: the parse holds the GIL, and a LocalCluster of threads
# converted slower than one process. Compressed inputs count as four times their size (real
# gzip/bzip2 runs expand 1.5 to 6 times).
CLUSTER_START_SECONDS = 1.0
INLINE_BYTES_PER_SECOND = 35e6
WORKER_SPEEDUP = 0.8
COMPRESSED_EXPANSION = 4


def work_bytes(inputs: list[Path]) -> int:
    """The bytes of mzML-equivalent work in ``inputs`` (compressed ones weighted up)."""
    total = 0
    for path in inputs:
        try:
            size = input_size(path)
        except (OSError, MzPeakDaskError):
            continue  # a missing input fails with its own error when converted
        compressed = path.name.lower().endswith((".gz", ".bz2"))
        total += size * COMPRESSED_EXPANSION if compressed else size
    return total


def cluster_pays(size: int, workers: int) -> bool:
    """Whether ``workers`` local processes convert ``size`` bytes sooner than this process,
    their start included: ``size / rate > start + size / (rate * speedup)``."""
    speedup = WORKER_SPEEDUP * workers
    if speedup <= 1:
        return False
    return size > CLUSTER_START_SECONDS * INLINE_BYTES_PER_SECOND / (1 - 1 / speedup)


def choose_cluster(
    inputs: list[Path], cluster: ClusterOptions | None = None, shape: ClusterOptions | None = None
) -> tuple[ClusterOptions, str]:
    """Where a conversion of ``inputs`` runs, and a line saying so.

    ``cluster`` given: exactly that (the caller or the user chose). None: in this process when
    the work is too small for a LocalCluster to pay for its start, else a LocalCluster of the
    options ``shape`` (the user's memory limit, threads, window, dashboard: all but where to
    run; default options when None, a worker per core)."""
    if cluster is not None:
        return cluster, _describe(cluster)
    size = work_bytes(inputs)
    default = replace(shape or ClusterOptions(), cluster="local", workers=None, scheduler=None)
    what = f"({size / 1e6:,.1f} MB input)"
    if cluster_pays(size, default.worker_count()):
        return default, f"starting {_local(default.worker_count())} {what}"
    return default.updated(cluster="inline"), f"running in-process {what}"


def _local(workers: int) -> str:
    return f"a LocalCluster of {workers} worker{'s' if workers > 1 else ''}"


def _describe(cluster: ClusterOptions) -> str:
    if cluster.scheduler:
        return f"running on the Dask scheduler at {cluster.scheduler}"
    if cluster.cluster == "inline":
        return "running in-process"
    if cluster.cluster == "local":
        return f"starting {_local(cluster.worker_count())}"
    return f"starting a {cluster.cluster} cluster"


def convert(
    input: str | os.PathLike,
    output: str | os.PathLike,
    options: ConvertOptions | None = None,
    *,
    cluster: ClusterOptions | None = None,
    client: Any = None,
    progress: Progress | None = None,
) -> ConversionResult:
    """Convert one MS run into an mzPeak archive (see :func:`convert_many`)."""
    results = convert_many(
        [(input, output)], options, cluster=cluster, client=client, progress=progress
    )
    outcome = results[0]
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def convert_many(
    jobs: list[tuple[str | os.PathLike, str | os.PathLike]],
    options: ConvertOptions | None = None,
    *,
    cluster: ClusterOptions | None = None,
    client: Any = None,
    progress: Progress | None = None,
    fail_fast: bool = True,
    on_result: Callable[[int, ConversionResult | MzPeakDaskError], None] | None = None,
    check: bool = False,
    shape: ClusterOptions | None = None,
) -> list[ConversionResult | MzPeakDaskError]:
    """Convert several runs side by side on one cluster; inputs and outputs are paths or
    URLs (``s3://``, ``gs://``, ``az://``; ``https://`` inputs), see :mod:`.staged`.

    ``cluster`` None and no ``client``: :func:`choose_cluster` picks this process or a
    LocalCluster (of the options ``shape``) from the size of the inputs. Returns one entry per
    job, in order: the result, or (with ``fail_fast=False``) the error that stopped that job —
    one bad input then does not stop the others. ``on_result(k, outcome)`` is called as each
    job ends. With ``check``, a run finished on a worker also checks its archive there
    (validation, member digests, TIC thumbnail: the result's ``inspection``), as a batch
    records it.
    """
    options = options or ConvertOptions()
    run = partial(_run_local, check=check, shape=shape)
    if not any(is_url(i) or is_url(o) for i, o in jobs):  # file:// URLs too
        pairs = [(Path(local_path(i)), Path(local_path(o))) for i, o in jobs]
        return run(pairs, options, cluster, client, progress, fail_fast, on_result)
    refuse_overwriting_objects(jobs)
    with StagedJobs(jobs, options) as staged:  # URLs: staged locally, uploaded at the end
        return staged.run(run, cluster, client, progress, fail_fast, on_result)


def refuse_overwriting_objects(jobs: list[tuple[str | os.PathLike, str | os.PathLike]]) -> None:
    """Refuse the whole call, before any work, when an output URL names an input's object
    (however each is spelt, :func:`~.storage.urls.object_identity`): the archive would
    replace it. Local outputs are checked by file identity as each run starts
    (:class:`~.archive.container.Inputs`)."""
    inputs = {object_identity(i): i for i, _ in reversed(jobs)}
    for _, output in jobs:
        if is_url(output):
            same = inputs.get(object_identity(output))
            if same is not None:
                raise OutputError(f"{output}: is the input {same}; choose another output")


def _run_local(
    pairs, options, cluster, client, progress, fail_fast, on_result, check=False, shape=None
):
    """Convert local ``pairs``; with no cluster nor client, their size picks where."""
    if client is None:
        cluster, _ = choose_cluster([i for i, _ in pairs], cluster, shape)
    else:
        cluster = cluster or ClusterOptions()
    return run_jobs(pairs, options, cluster, client, progress, fail_fast, on_result, check)
