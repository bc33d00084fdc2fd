"""TIC, base-peak and extracted-ion chromatograms across many runs, computed in parallel.

Every run contributes lazy pieces (one Dask task per block of spectra or batch of chunks);
the pieces of all runs are computed in one go — on a ``distributed.Client`` when given, else
with Dask's threaded scheduler — and assembled into one pandas DataFrame per run, indexed by
``spectrum_index`` with a ``time`` column (minutes) first. :func:`plot_xic` draws XICs and
:func:`plot_tic` total-ion and base-peak chromatograms with matplotlib (Agg backend: no display
needed).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..errors import OptionsError
from ..options import AnalysisOptions, ClusterOptions
from .kernels import add_rows, ppm_windows, select_spectra
from .runs import Sources, as_runs, compute, unique_names
from .source import Run

STATS = ("tic", "base_peak_mz", "base_peak_intensity")


def _selection(run: Run, rt: tuple[float, float] | None, ms_level: int | None) -> np.ndarray:
    spectra = run.spectra
    return select_spectra(spectra["time"].to_numpy(), spectra["ms_level"].to_numpy(), rt, ms_level)


def _computed(pieces: list[list[Any]], client: Any, task_timeout: float) -> list[list[Any]]:
    """Compute every run's pieces together; hand back each run's results."""
    flat = compute([p for run in pieces for p in run], client, task_timeout)
    out, at = [], 0
    for run in pieces:
        out.append(flat[at : at + len(run)])
        at += len(run)
    return out


def _per_run(
    sources: Sources,
    rt: tuple[float, float] | None,
    ms_level: int | None,
    client: Any,
    task_timeout: float,
    pieces_of: Callable[[Run, np.ndarray], list[Any]],
) -> Iterator[tuple[str, Run, np.ndarray, list[Any]]]:
    """Select each run's spectra, compute the pieces of every run together, and hand back per
    run its name, the run, the selected spectrum ids and the results of its pieces."""
    runs = as_runs(sources, client, task_timeout)
    selections = [_selection(run, rt, ms_level) for run in runs]
    pieces = [pieces_of(run, ids) for run, ids in zip(runs, selections, strict=True)]
    results = _computed(pieces, client, task_timeout)
    return zip(unique_names(runs), runs, selections, results, strict=True)


def outside(runs: list[Run], rt: tuple[float, float], ms_level: int | None) -> str | None:
    """Why a retention-time window selects no spectrum of any of ``runs`` (the window against
    the runs' times, one line), or None when it selects some."""
    if any(len(_selection(run, rt, ms_level)) for run in runs) or not runs:
        return None
    times = np.concatenate([run.spectra["time"].to_numpy(dtype=np.float64) for run in runs])
    times = times[np.isfinite(times)]
    kind = "spectra" if ms_level is None else f"MS{ms_level} spectra"
    where, whose = ("in any of the runs", "their") if len(runs) > 1 else ("in the run", "its")
    line = f"no {kind} between {rt[0]:g} and {rt[1]:g} min {where}"
    if len(times):
        line += f" ({whose} spectra span {times.min():.4g} to {times.max():.4g} min)"
    return line


def _frame(run: Run, ids: np.ndarray, values: np.ndarray, columns: Sequence[Any]) -> pd.DataFrame:
    frame = pd.DataFrame(values, columns=list(columns), index=pd.Index(ids, name="spectrum_index"))
    frame.insert(0, "time", run.spectra["time"].to_numpy()[ids])
    return frame


def xic(
    sources: Sources,
    targets: Sequence[float],
    *,
    ppm: float = AnalysisOptions.ppm,
    rt: tuple[float, float] | None = None,
    ms_level: int | None = AnalysisOptions.ms_level,
    client: Any = None,
    task_timeout: float = ClusterOptions.task_timeout,
) -> dict[str, pd.DataFrame]:
    """Extracted-ion chromatograms, keyed by run name (repeats suffixed ``#2`` ...): per
    run, per selected spectrum (MS level ``ms_level``, None for all; time within ``rt``
    minutes), the summed intensity of the points within ``ppm`` of each target m/z. Columns:
    ``time`` and one per target (the target m/z). On a ``client``, a cluster on which no
    piece ends for ``task_timeout`` seconds stops the call (:class:`ClusterError`)."""
    targets = np.asarray(targets, dtype=np.float64)
    low, high = ppm_windows(targets, ppm)
    out = {}
    for name, run, ids, parts in _per_run(
        sources, rt, ms_level, client, task_timeout, lambda run, ids: run.xic_parts(ids, low, high)
    ):
        total = add_rows(np.zeros((len(ids), len(targets))), parts)
        out[name] = _frame(run, ids, total, targets.tolist())
    return out


def spectrum_stats(
    sources: Sources,
    *,
    rt: tuple[float, float] | None = None,
    ms_level: int | None = AnalysisOptions.ms_level,
    client: Any = None,
    task_timeout: float = ClusterOptions.task_timeout,
) -> dict[str, pd.DataFrame]:
    """Per run and selected spectrum: ``tic`` (total intensity), ``base_peak_mz`` and
    ``base_peak_intensity`` (NaN for a spectrum without points); ``client`` and
    ``task_timeout`` as for :func:`xic`."""
    out = {}
    for name, run, ids, parts in _per_run(
        sources, rt, ms_level, client, task_timeout, lambda run, ids: run.stats_parts(ids)
    ):
        table = np.zeros((len(ids), 3))
        table[:, 1:] = np.nan
        for rows, values in parts:
            table[rows] = values
        out[name] = _frame(run, ids, table, STATS)
    return out


def tic(
    sources: Sources,
    *,
    rt: tuple[float, float] | None = None,
    ms_level: int | None = AnalysisOptions.ms_level,
    client: Any = None,
    task_timeout: float = ClusterOptions.task_timeout,
) -> dict[str, pd.DataFrame]:
    """Total-ion chromatograms (columns ``time``, ``tic``)."""
    stats = spectrum_stats(
        sources, rt=rt, ms_level=ms_level, client=client, task_timeout=task_timeout
    )
    return {name: frame[["time", "tic"]] for name, frame in stats.items()}


def base_peak(
    sources: Sources,
    *,
    rt: tuple[float, float] | None = None,
    ms_level: int | None = AnalysisOptions.ms_level,
    client: Any = None,
    task_timeout: float = ClusterOptions.task_timeout,
) -> dict[str, pd.DataFrame]:
    """Base-peak chromatograms (``time``, ``base_peak_mz``, ``base_peak_intensity``)."""
    stats = spectrum_stats(
        sources, rt=rt, ms_level=ms_level, client=client, task_timeout=task_timeout
    )
    columns = ["time", "base_peak_mz", "base_peak_intensity"]
    return {name: frame[columns] for name, frame in stats.items()}


def plot_xic(
    results: dict[str, pd.DataFrame], path: str | os.PathLike, *, ppm: float | None = None
) -> None:
    """One panel per target m/z, one line per run (intensity against time), saved to ``path``
    (the format follows its suffix: .png, .pdf, .svg ...). A bare ``Figure`` draws with the
    Agg renderer and leaves pyplot's backend and figure list alone."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise OptionsError("--plot needs matplotlib (pip install 'mzpeak-dask[plot]')") from None
    targets = _targets(results)
    figure = Figure(figsize=(8, 2.2 * len(targets) + 0.6))
    axes = figure.subplots(len(targets), 1, sharex=True, squeeze=False)
    for axis, target in zip(axes[:, 0], targets, strict=True):
        for name, frame in results.items():
            axis.plot(frame["time"], frame[target], label=name, linewidth=1)
        title = f"m/z {target:.4f}" + (f" ± {ppm:g} ppm" if ppm else "")
        axis.set_title(title, fontsize=9)
        axis.set_ylabel("intensity")
    axes[-1, 0].set_xlabel("retention time (min)")
    if len(results) <= 12:
        axes[0, 0].legend(fontsize=7, loc="upper right")
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def plot_tic(results: dict[str, pd.DataFrame], path: str | os.PathLike) -> None:
    """Total-ion and base-peak chromatograms (frames of :func:`spectrum_stats`), one panel
    each, one line per run, saved to ``path`` (the format follows its suffix)."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise OptionsError("--plot needs matplotlib (pip install 'mzpeak-dask[plot]')") from None
    if not results:
        raise OptionsError("nothing to plot: no runs")
    figure = Figure(figsize=(8, 5), layout="constrained")
    axes = figure.subplots(2, 1, sharex=True)
    for axis, column, title in zip(
        axes, ("tic", "base_peak_intensity"), ("total ion current", "base peak"), strict=True
    ):
        for name, frame in results.items():
            axis.plot(frame["time"], frame[column], label=name, linewidth=1)
        axis.set_title(title, fontsize=9)
        axis.set_ylabel("intensity")
    axes[-1].set_xlabel("retention time (min)")
    if len(results) <= 12:
        axes[0].legend(fontsize=7, loc="upper right")
    figure.savefig(path, dpi=120)


def _targets(results: dict[str, pd.DataFrame]) -> list[float]:
    for frame in results.values():
        return [c for c in frame.columns if c != "time"]
    raise OptionsError("nothing to plot: no runs")


__all__ = ["base_peak", "outside", "plot_tic", "plot_xic", "spectrum_stats", "tic", "xic"]
