"""Opening many runs for analysis: mzPeak archives, Zarr stores, or single run groups, each
through the first of :data:`SOURCES` that can open it (see :mod:`.source`); a folder that is
neither stands for the runs under it (a batch's output folder, say: :mod:`.run_folders`)."""

from __future__ import annotations

import concurrent.futures
import os
import queue
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dask import delayed

from ..errors import ClusterError, InputError
from ..options import ClusterOptions
from ..storage.urls import is_url, local_path
from ..zarr_runs.locations import is_single_file, zip_location
from ..zarr_runs.store import enable_rectilinear
from .archive_run import ArchiveSource
from .guarded import Failed, guarded
from .run_folders import expand_folders
from .source import Run, RunSource
from .zarr_run import ZarrSource

# the kinds of source, asked in this order whether they can open a path: a folder holding a
# zarr.json is a Zarr store, anything else is taken for an mzPeak archive
SOURCES: tuple[type[RunSource], ...] = (ZarrSource, ArchiveSource)
Sources = Iterable[Run | str | os.PathLike] | str | os.PathLike


def open_run_source(source: str | os.PathLike) -> list[Run]:
    """The runs of one source: an archive, a Zarr store (all its runs) or one run group; a
    path or a URL; a single-file run (``RUN.zarr.zip``)."""
    source = local_path(source)
    if not is_url(source) and Path(source).exists():
        if not (Path(source).is_file() or Path(source).is_dir()):  # a FIFO would be waited on
            raise InputError(f"{source}: not a regular file, not an archive or Zarr store")
    if is_single_file(source):
        return ZarrSource.open(zip_location(source))
    if is_url(source):  # an archive by its name, else a store or a run group
        if str(source).rstrip("/").endswith(".mzpeak"):
            return ArchiveSource.open(source)
        return ZarrSource.open(str(source))
    path = Path(source)
    if not path.exists():
        raise InputError(f"{path}: no such archive or Zarr store")
    kind = next(s for s in SOURCES if s.guess_can_open(path))
    return kind.open(path)


def open_runs(
    sources: Iterable[str | os.PathLike] | str | os.PathLike,
    client: Any = None,
    task_timeout: float = ClusterOptions.task_timeout,
) -> list[Run]:
    """Open every run of ``sources`` (archives and Zarr stores may be mixed; a folder holding
    them stands for every run under it), side by side: on ``client``'s workers, else on Dask's
    threads here (see :func:`open_each`). Run names are made unique by appending ``#2``,
    ``#3`` ... to repeats. The first source that cannot be opened raises its error."""
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    sources = expand_folders(list(sources))
    return _named([run for each in _open_all(sources, client, task_timeout) for run in each])


def _open_all(sources: Iterable[Any], client: Any, task_timeout: float) -> list[list[Run]]:
    """The runs of each source, opened side by side; the first failure raises its error."""
    sources = list(sources)
    task = delayed(open_run_source, pure=False)
    return compute([task(s) for s in sources], client, task_timeout, _threads(sources))


def open_each(
    sources: list[str | os.PathLike],
    client: Any = None,
    task_timeout: float = ClusterOptions.task_timeout,
) -> list[list[Run] | Failed]:
    """The runs of each of ``sources``, or a :class:`Failed` naming it, opened side by side:
    on ``client``'s workers, else on Dask's threads here. Opening a run reads its spectrum
    table, a few requests over a network, each waited for: a repository's runs opened one
    after another kept the caller waiting before any work began (quantify, 50 runs over HTTP
    at 20 ms a request, 2 workers: 15.3 and 14.7 s with the runs opened one by one, 10.8 and
    10.7 s opened here; tests/benchmarks/bench_quantify.py, part r)."""
    task = delayed(guarded, pure=False)
    parts = [task(str(s), open_run_source, s) for s in sources]
    return compute(parts, client, task_timeout, _threads(sources))


def _threads(sources: list[Any]) -> int | None:
    """Threads to open ``sources`` on without a client: :data:`OPEN_THREADS` when some lie far
    away (URLs), else Dask's own count (opening a local run is work for a core: 50 local runs
    took 0.53 to 0.58 s on 2 threads, 0.79 to 0.97 s on 16)."""
    return OPEN_THREADS if any(is_url(s) for s in sources) else None


def unique_names(runs: list[Run]) -> list[str]:
    """The runs' names, repeats suffixed ``#2``, ``#3`` ... (the keys of every result)."""
    seen: dict[str, int] = {}
    names = []
    for run in runs:
        count = seen.get(run.name, 0) + 1
        seen[run.name] = count
        names.append(run.name if count == 1 else f"{run.name}#{count}")
    return names


def as_runs(
    sources: Sources, client: Any = None, task_timeout: float = ClusterOptions.task_timeout
) -> list[Run]:
    """Runs already opened pass through; paths are opened side by side, as
    :func:`open_runs` opens them (names made unique within each source; a folder of runs
    stands for every run under it)."""
    if isinstance(sources, (str, os.PathLike, Run)):
        sources = [sources]
    sources = expand_folders(list(sources))
    opened = iter(_open_all([s for s in sources if not isinstance(s, Run)], client, task_timeout))
    runs: list[Run] = []
    for source in sources:  # in the order given; names unique within each source
        runs += [source] if isinstance(source, Run) else _named(next(opened))
    return runs


def _named(runs: list[Run]) -> list[Run]:
    for run, name in zip(runs, unique_names(runs), strict=True):
        run.name = name
    return runs


# Opening a run far away is mostly waiting on its requests: without a client, runs given by
# URL are opened on at least this many of Dask's threads, not one per core (50 runs over HTTP
# at 20 ms a request, 2 cores: 3.9 to 4.1 s against 1.4 s; tests/benchmarks/bench_quantify.py,
# part o)
OPEN_THREADS = 16

# Dask's names of the schedulers that run in this process (dask.base.named_schedulers)
LOCAL_SCHEDULERS = {
    "sync",
    "synchronous",
    "single-threaded",
    "threads",
    "threading",
    "processes",
    "multiprocessing",
}


def compute(
    parts: list[Any],
    client: Any = None,
    task_timeout: float = ClusterOptions.task_timeout,
    threads: int | None = None,
) -> list[Any]:
    """Compute lazy pieces: on ``client`` (a ``distributed.Client``; :class:`ClusterError`
    when no piece ends for ``task_timeout`` seconds, the scheduler does not answer in that
    time, or the cluster cancels a piece), else in this process: on the local scheduler
    Dask's configuration names (``dask.config.set(scheduler="sync")``), or Dask's threads.
    Never on a distributed client merely left as the process' default (a client names itself
    in the configuration): one with no worker left would be waited on for ever. ``threads``:
    on Dask's threads, at least that many (parts that mostly wait on requests), unless
    Dask's configuration sets ``num_workers``."""
    import dask

    if not parts:
        return []
    if client is None:
        scheduler = dask.config.get("scheduler", None)
        scheduler = scheduler if scheduler in LOCAL_SCHEDULERS else "threads"
        options = {}
        waits = scheduler in ("threads", "threading") and threads is not None
        if waits and dask.config.get("num_workers", None) is None:
            options["num_workers"] = max(threads, os.cpu_count() or 1)
        return list(dask.compute(*parts, scheduler=scheduler, **options))
    futures: list[Any] = []
    ended: queue.SimpleQueue[int] = queue.SimpleQueue()
    failure: BaseException | None = None
    try:
        client.run(enable_rectilinear, callback_timeout=task_timeout)
        futures = client.compute(list(parts))
        for at, future in enumerate(futures):
            future.add_done_callback(lambda _, at=at: ended.put(at))
        results: list[Any] = [None] * len(futures)
        for _ in futures:  # each piece's result (or its error) fetched as it ends
            at = ended.get(timeout=task_timeout)
            if futures[at].status == "error":  # its own error, raised below (a TimeoutError too)
                failure = futures[at].exception(timeout=task_timeout)
                break
            results[at] = futures[at].result(timeout=task_timeout)
    except (queue.Empty, TimeoutError):
        raise ClusterError(
            f"no piece of the analysis ended on the Dask cluster in {task_timeout:g} s, or "
            "its scheduler did not answer: stopping (task_timeout)"
        ) from None
    except concurrent.futures.CancelledError as exc:  # a restart, a client's cancel
        raise ClusterError(f"the Dask cluster cancelled a piece of the analysis ({exc})") from None
    finally:
        for future in futures:
            future.release()  # a message: never a wait on a scheduler that may not answer
    if failure is not None:
        raise failure
    return results


__all__ = [
    "SOURCES",
    "Run",
    "Sources",
    "as_runs",
    "compute",
    "open_each",
    "open_run_source",
    "open_runs",
    "unique_names",
]
