"""Targeted quantification across many runs: a MINT target list integrated in every run into
one table, as Dask work.

Per run and MS level of the targets, the spectra of that level inside some target's RT window
are selected; their points are read in pieces (blocks of spectra of an archive, batches of
whole spectra of a Zarr store: :meth:`~mzpeak_dask.analysis.source.Run.point_parts`), each
piece given the targets whose RT window meets its spectra, so a chunked archive or a Zarr
store reads only the chunks that can hold one of them. A piece hands back its (target, point)
pairs; one task per run and level turns them into the run's figures, so only one row per
target leaves the workers.

The result is one row per (run, target) with the columns of :data:`COLUMNS`; the runs that
could not be read are listed, one line each, in ``result.attrs["failed"]`` (their rows are
absent; every other run's rows are there).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd
from dask import delayed

from ..errors import MzPeakDaskError
from ..options import ClusterOptions
from .guarded import Failed, first_failure, one_line
from .quant_kernels import chromatogram_figures, in_union, match_points, point_figures
from .runs import Sources, compute, open_runs
from .source import Run
from .targets import TargetList, target_list

POINT = (
    "peak_area",
    "peak_n_datapoints",
    "peak_max",
    "peak_min",
    "peak_mean",
    "peak_median",
    "peak_rt_of_max",
    "peak_mass_diff_50pc",
)
CHROMATOGRAM = ("area", "apex_time", "apex_intensity", "spectra")
COLUMNS = ("run", "peak_label", *POINT, *CHROMATOGRAM)


def _pairs(mz, intensity, positions, lo: int, time, targets: np.ndarray, picked: dict) -> tuple:
    """A piece's (target, spectrum position, m/z, intensity) of every matching point; its
    targets are ``targets`` (numbers among its level's), their arrays ``picked``."""
    mz = np.asarray(mz, dtype=np.float64)
    intensity = np.asarray(intensity, dtype=np.float64)
    positions = np.asarray(positions, dtype=np.int64)
    target, point = match_points(
        mz,
        intensity,
        time[positions - lo],
        picked["mean"],
        picked["delta"],
        picked["rt_min"],
        picked["rt_max"],
        picked["threshold"],
    )
    return targets[target], positions[point], mz[point], intensity[point]


def _summary(level: dict, time: np.ndarray, *parts: Any) -> dict[str, np.ndarray] | Failed:
    """The figures of one run's targets of one level from its pieces' pairs."""
    failed = first_failure(list(parts))
    if failed is not None:
        return failed
    target, spectrum, mz, intensity = (
        np.concatenate([np.zeros(0, dtype), *(p[k] for p in parts)])
        for k, dtype in enumerate((np.int64, np.int64, np.float64, np.float64))
    )
    count = len(level["mean"])
    out = point_figures(count, target, spectrum, mz, intensity, time, level["mean"])
    out |= chromatogram_figures(
        count, target, spectrum, intensity, time, level["rt_min"], level["rt_max"]
    )
    return out


def _level_arrays(targets: TargetList, which: np.ndarray) -> dict[str, np.ndarray]:
    """Targets ``which``, sorted by m/z once: the arrays a piece and a summary use."""
    return {
        "mean": targets.mz_mean[which],
        "delta": targets.delta[which],
        "rt_min": targets.rt_min[which],
        "rt_max": targets.rt_max[which],
        "threshold": targets.threshold[which],
    }


def _run_parts(run: Run, targets: TargetList) -> list[tuple[np.ndarray, Any]]:
    """Per MS level of the targets: (the targets' numbers in the list, lazy summary)."""
    spectra = run.spectra
    times = spectra["time"].to_numpy(dtype=np.float64)
    levels = spectra["ms_level"].to_numpy()
    out = []
    for level in np.unique(targets.ms_level).tolist():
        which = np.flatnonzero(targets.ms_level == level)
        which = which[np.argsort(targets.mz_mean[which], kind="stable")]
        arrays = _level_arrays(targets, which)
        rt_min, rt_max = arrays["rt_min"], arrays["rt_max"]
        ids = np.flatnonzero((levels == level) & in_union(times, rt_min, rt_max))
        time = times[ids]
        windows = (arrays["mean"] - arrays["delta"], arrays["mean"] + arrays["delta"])

        def args_of(lo: int, hi: int, time=time, arrays=arrays, windows=windows):
            span = time[lo:hi]
            low, high = arrays["rt_min"], arrays["rt_max"]
            near = np.flatnonzero((low <= span.max()) & (high >= span.min()))
            if not len(near):
                return None
            own = (windows[0][near], windows[1][near])
            return own, (lo, span, near, {k: v[near] for k, v in arrays.items()})

        parts = run.point_parts(ids, _pairs, args_of, windows) if len(ids) else []
        out.append((which, delayed(_summary, pure=True)(arrays, time, *parts)))
    return out


def _open(sources: Sources | Run) -> tuple[list[Run], list[str]]:
    """The runs of ``sources`` (opened runs pass through) and a line per source that could
    not be opened."""
    if isinstance(sources, (str, os.PathLike, Run)):
        sources = [sources]
    runs: list[Run] = []
    failed: list[str] = []
    for source in sources:
        if isinstance(source, Run):
            runs.append(source)
            continue
        try:
            runs += open_runs(source)
        except (MzPeakDaskError, OSError, ValueError) as exc:
            failed.append(one_line(str(source), exc))
    return runs, failed


def _rows(run: Run, targets: TargetList, levels: list[tuple[np.ndarray, Any]], results) -> Any:
    """The run's rows, or its :class:`Failed`."""
    table: dict[str, np.ndarray] = {}
    for (which, _), result in zip(levels, results, strict=True):
        if isinstance(result, Failed):
            return result
        for name, values in result.items():
            column = table.setdefault(name, np.zeros(len(targets), values.dtype))
            column[which] = values
    frame = pd.DataFrame({"run": run.source, "peak_label": targets.labels, **table})
    return frame[list(COLUMNS)]


def quantify(
    runs: Sources | Run,
    targets: pd.DataFrame | str | os.PathLike,
    client: Any = None,
    *,
    task_timeout: float = ClusterOptions.task_timeout,
) -> pd.DataFrame:
    """Integrate the MINT target list ``targets`` (a DataFrame or a CSV or Parquet path;
    :mod:`~mzpeak_dask.analysis.targets`) in every run of ``runs`` (paths or URLs of archives
    and Zarr stores, or runs of :func:`open_runs`).

    One row per (run, target), in the order of the runs then of the targets, with the columns
    of :data:`COLUMNS`: ``run`` (where the run was opened from), ``peak_label``, MINT's
    figures over the target's points (``peak_area`` the sum of their intensities,
    ``peak_n_datapoints``, ``peak_max``, ``peak_min``, ``peak_mean``, ``peak_median``,
    ``peak_rt_of_max`` in minutes, first in run order on ties, ``peak_mass_diff_50pc`` the
    median m/z error in ppm; without points 0, 0 and nulls) and the chromatographic view
    (``area``: the trapezoid over minutes of the per-spectrum sums of the points, 0 where a
    spectrum of the window has none; ``apex_time`` and ``apex_intensity``: its maximum;
    ``spectra``: the spectra in the window). A target's points are the points of its MS level's
    spectra with ``rt_min <= time <= rt_max``, ``|m/z - mz_mean| <= mz_mean * mz_width * 1e-6``
    and ``intensity >= intensity_threshold``; points of zero intensity are never counted (the
    conversion strips runs of zeros from profile spectra, so their number is not the source's).

    A run that cannot be opened or read is left out and named, one line each, in
    ``result.attrs["failed"]`` (a list, empty when every run was read). On a ``client``, a
    cluster on which no piece ends for ``task_timeout`` seconds stops the call
    (:class:`~mzpeak_dask.errors.ClusterError`)."""
    wanted = target_list(targets)
    opened, failed = _open(runs)
    levels = [_run_parts(run, wanted) for run in opened]
    flat = compute([summary for run in levels for _, summary in run], client, task_timeout)
    frames, at = [], 0
    for run, parts in zip(opened, levels, strict=True):
        rows = _rows(run, wanted, parts, flat[at : at + len(parts)])
        at += len(parts)
        if isinstance(rows, Failed):
            failed.append(rows.message)
        else:
            frames.append(rows)
    result = pd.concat(frames, ignore_index=True) if frames else _empty()
    result.attrs["failed"] = failed
    return result


def _empty() -> pd.DataFrame:
    frame = pd.DataFrame({name: pd.Series([], dtype="float64") for name in COLUMNS})
    frame["run"] = frame["run"].astype(object)
    frame["peak_label"] = frame["peak_label"].astype(object)
    for name in ("peak_n_datapoints", "spectra"):
        frame[name] = frame[name].astype("int64")
    return frame


__all__ = ["CHROMATOGRAM", "COLUMNS", "POINT", "quantify"]
