"""Opening many runs for analysis: mzPeak archives, Zarr stores, or single run groups."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import zarr

from ..errors import InputError
from ..export.zarr import FORMAT
from ..export.zarr_store import enable_rectilinear
from .archive_run import ArchiveRun
from .zarr_run import ZarrRun

Run = ArchiveRun | ZarrRun
Sources = Iterable[Run | str | os.PathLike] | str | os.PathLike


def _zarr_runs(path: Path) -> list[ZarrRun]:
    enable_rectilinear()
    group = zarr.open_group(str(path), mode="r")
    if group.attrs.get("format") == FORMAT:
        return [ZarrRun(path)]
    names = sorted(
        name
        for name, child in group.groups()
        if not name.startswith(".") and child.attrs.get("format") == FORMAT
    )
    if not names:
        raise InputError(f"{path}: a Zarr store without exported runs")
    return [ZarrRun(path / name) for name in names]


def open_run_source(source: str | os.PathLike) -> list[Run]:
    """The runs of one source: an archive, a Zarr store (all its runs) or one run group."""
    path = Path(source)
    if not path.exists():
        raise InputError(f"{path}: no such archive or Zarr store")
    if path.is_dir() and (path / "zarr.json").exists():
        return _zarr_runs(path)
    return [ArchiveRun(path)]


def open_runs(sources: Iterable[str | os.PathLike] | str | os.PathLike) -> list[Run]:
    """Open every run of ``sources`` (archives and Zarr stores may be mixed). Run names are
    made unique by appending ``#2``, ``#3`` ... to repeats."""
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    runs = [run for source in sources for run in open_run_source(source)]
    for run, name in zip(runs, unique_names(runs), strict=True):
        run.name = name
    return runs


def unique_names(runs: list[Run]) -> list[str]:
    """The runs' names, repeats suffixed ``#2``, ``#3`` ... (the keys of every result)."""
    seen: dict[str, int] = {}
    names = []
    for run in runs:
        count = seen.get(run.name, 0) + 1
        seen[run.name] = count
        names.append(run.name if count == 1 else f"{run.name}#{count}")
    return names


def as_runs(sources: Sources) -> list[Run]:
    """Runs already opened pass through; paths are opened with :func:`open_runs`."""
    if isinstance(sources, (str, os.PathLike, ArchiveRun, ZarrRun)):
        sources = [sources]
    runs: list[Run] = []
    for source in sources:
        runs += [source] if isinstance(source, (ArchiveRun, ZarrRun)) else open_runs(source)
    return runs


def compute(parts: list[Any], client: Any = None) -> list[Any]:
    """Compute lazy pieces: on ``client`` (a ``distributed.Client``), else with the scheduler
    Dask is configured with (its threads in this process unless set otherwise, e.g.
    ``dask.config.set(scheduler="sync")``)."""
    import dask

    if not parts:
        return []
    if client is not None:
        client.run(enable_rectilinear)
        return list(dask.compute(*parts, scheduler=client))
    return list(dask.compute(*parts))


__all__ = ["Run", "Sources", "as_runs", "compute", "open_run_source", "open_runs", "unique_names"]
