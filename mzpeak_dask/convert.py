"""Converting runs: a plan task, a task per partition and a finishing task for each run.

:func:`convert` converts one run; :func:`convert_many` converts several side by side on one
cluster (parallel across files and within each file). Both run on Dask by default — an embedded
LocalCluster, a running scheduler, a SLURM cluster, or a ``distributed.Client`` you pass in —
and ``ClusterOptions(cluster="inline")`` runs everything in this process without Dask. By
default (``cluster = "auto"``) the size of the work decides whether starting a LocalCluster
pays for itself (:mod:`.parallel.where`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from .encode.contracts import ConversionResult, Progress
from .errors import MzPeakDaskError, OutputError
from .format import vocabulary as V
from .model.run_paths import RunPaths
from .options import ClusterOptions, ConvertOptions
from .parallel.coordinator import run_jobs
from .parallel.where import describe, resolve, work_bytes
from .storage.urls import is_url, local_path, object_identity
from .transfer.staged import StagedJobs


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
    announce: Callable[[str], None] | None = None,
    names: Sequence[tuple[str, str]] | None = None,
) -> list[ConversionResult | MzPeakDaskError]:
    """Convert several runs side by side on one cluster; inputs and outputs are paths or
    URLs (``s3://``, ``gs://``, ``az://``; ``https://`` inputs), see :mod:`.staged`.

    ``cluster``: where it runs (default :class:`ClusterOptions`: ``cluster = "auto"``, this
    process or a LocalCluster by the size of the inputs, :mod:`.parallel.where`), unless a
    ``client`` is given; ``announce(line)`` hears where the size of the work put it. Returns
    one entry per job, in order: the result, or (with ``fail_fast=False``) the error that
    stopped that job — one bad input then does not stop the others. ``on_result(k, outcome)``
    is called as each job ends. With ``check``, the task finishing each run also checks its
    archive (validation, member digests, TIC thumbnail: the result's ``inspection``), as a
    batch records it. ``names``: what the results, errors and progress call each job's input
    and output (default: the paths or URLs given).
    """
    options = options or ConvertOptions()
    run = partial(
        _run_local,
        options=options,
        cluster=cluster,
        client=client,
        progress=progress,
        fail_fast=fail_fast,
        check=check,
        announce=announce,
    )
    if not any(is_url(i) or is_url(o) for i, o in jobs):  # file:// URLs too
        local = [(Path(local_path(i)), Path(local_path(o))) for i, o in jobs]
        named = names or [(str(i), str(o)) for i, o in local]
        paths = [RunPaths(*pair, *name) for pair, name in zip(local, named, strict=True)]
        return run(paths, on_result=on_result)
    refuse_overwriting_objects(jobs)
    with StagedJobs(jobs, options, names) as staged:  # URLs: staged locally, uploaded at the end
        paths = staged.start(fail_fast, on_result)
        if paths:  # each archive uploaded as its run ends
            run(paths, on_result=staged.finished)
        return staged.outcomes()


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
    paths: list[RunPaths],
    *,
    options: ConvertOptions,
    cluster: ClusterOptions | None,
    client: Any,
    progress: Progress | None,
    fail_fast: bool,
    on_result: Callable[[int, ConversionResult | MzPeakDaskError], None] | None,
    check: bool,
    announce: Callable[[str], None] | None,
) -> list[ConversionResult | MzPeakDaskError]:
    """Convert the runs of ``paths`` (:class:`~.run_paths.RunPaths`, local) where ``cluster``
    says (``auto``: by their size)."""
    cluster = cluster or ClusterOptions()
    if client is None and cluster.cluster == "auto":
        size = work_bytes(p.source for p in paths)
        chosen = resolve(cluster, size)
        if announce is not None and not (cluster.workers or cluster.scheduler):
            announce(describe(chosen, size))  # where the size of the work put it
        cluster = chosen
    return run_jobs(paths, options, cluster, client, progress, fail_fast, on_result, check)
