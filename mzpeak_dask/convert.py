"""Converting runs: plan on the coordinator, encode partitions on workers, assemble in order.

:func:`convert` converts one run; :func:`convert_many` converts several side by side on one
cluster (parallel across files and within each file). Both run on Dask by default — an embedded
LocalCluster, a running scheduler, a SLURM cluster, or a ``distributed.Client`` you pass in —
and ``ClusterOptions(cluster="inline")`` runs everything in this process without Dask.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import vocabulary as V
from .contracts import ConversionResult, Progress
from .errors import MzPeakDaskError
from .options import ClusterOptions, ConvertOptions
from .parallel.scheduler import run_jobs


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
) -> list[ConversionResult | MzPeakDaskError]:
    """Convert several runs side by side on one cluster.

    Returns one entry per job, in order: the result, or (with ``fail_fast=False``) the error
    that stopped that job — one bad input then does not stop the others. ``on_result(k,
    outcome)`` is called as each job ends. With ``check``, a run finished on a worker also
    checks its archive there (validation, member digests, TIC thumbnail: the result's
    ``inspection``), as a batch records it.
    """
    options = options or ConvertOptions()
    cluster = cluster or ClusterOptions()
    return run_jobs(
        [(Path(i), Path(o)) for i, o in jobs],
        options,
        cluster,
        client,
        progress,
        fail_fast,
        on_result,
        check,
    )
