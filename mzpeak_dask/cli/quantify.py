"""The ``quantify`` and ``ion-map`` subcommands of ``mzpeak-dask`` (conventions as in
:mod:`mzpeak_dask.cli.analysis`). Outputs are written to a temporary file beside the target
and renamed into place, so they appear whole or not at all."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, OptionsError
from ..options import ClusterOptions
from ..parallel.cluster import cluster_client
from ..storage.outputs import atomic_write, check_output, write_table
from .analysis import ANALYSIS_CLUSTER
from .args import add_options, analysis_cluster, command


def plot_heatmap(frame: Any, path: str) -> None:
    """Run x target heatmap of log10(peak_area) (blank where 0), saved with matplotlib."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise OptionsError("--plot needs matplotlib (pip install 'mzpeak-dask[plot]')") from None
    table = frame.pivot_table(
        index="run", columns="peak_label", values="peak_area", aggfunc="first", sort=False
    )
    values = table.to_numpy(dtype=np.float64)
    shown = np.where(values > 0, np.log10(np.where(values > 0, values, 1)), np.nan)
    rows, columns = table.shape
    targets = [str(c) for c in table.columns] if columns <= 80 else []
    names = [Path(str(r)).name for r in table.index] if rows <= 80 else []
    # room for the tick labels (7 pt characters, about 0.06 inch wide) beside the cells
    width = 3 + 0.35 * columns + 0.06 * max(map(len, names), default=0)
    height = 1.5 + 0.35 * rows + 0.06 * max(map(len, targets), default=0)
    size = (min(max(width, 6), 30), min(max(height, 4), 24))
    figure = Figure(figsize=size, layout="constrained")
    axis = figure.subplots()
    image = axis.imshow(shown, aspect="auto", cmap="viridis", interpolation="nearest")
    figure.colorbar(image, ax=axis, label="log10 peak_area")
    if targets:
        axis.set_xticks(range(columns), targets, rotation=90, fontsize=7)
    if names:
        axis.set_yticks(range(rows), names, fontsize=7)
    axis.set_xlabel("target")
    axis.set_ylabel("run")
    atomic_write(path, lambda tmp: figure.savefig(tmp, dpi=120, bbox_inches="tight"))


def cmd_quantify(args: argparse.Namespace) -> int:
    from ..analysis import quantify

    check_output(args.output)
    check_output(args.plot)
    cluster = analysis_cluster(args)
    with cluster_client(cluster) as client:  # none: Dask's threads here
        result = quantify(
            args.sources, args.targets, client=client, task_timeout=cluster.task_timeout
        )
    failed = result.attrs.get("failed", [])
    if failed and not len(result):  # no run could be read: no table of nothing is written
        for line in failed:
            print(f"error: {line}", file=sys.stderr)
        return 1
    write_table(result, args.output)
    if args.plot and len(result):
        plot_heatmap(result, args.plot)
    if not args.quiet:
        runs = result["run"].nunique()
        print(f"{len(result):,} rows ({runs} runs) written to {args.output}", file=sys.stderr)
    for line in failed:
        print(f"error: {line}", file=sys.stderr)
    return 1 if failed else 0


def bins(value: str) -> np.ndarray:
    """``LO:HI:N`` -> the N + 1 edges of N equal bins."""
    try:
        low, high, count = value.split(":")
        low_f, high_f, n = float(low), float(high), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LO:HI:N, got {value!r}") from None
    if not (n >= 1 and high_f > low_f and n <= 100_000):
        raise argparse.ArgumentTypeError(f"expected LO < HI and 1 <= N <= 100000, got {value!r}")
    return np.linspace(low_f, high_f, n + 1)


def cmd_ion_map(args: argparse.Namespace) -> int:
    from ..analysis import ion_map, open_runs, plot_ion_map
    from ..analysis.runs import compute

    check_output(args.plot)
    runs = open_runs(args.source)
    if len(runs) != 1:
        raise InputError(f"{args.source}: {len(runs)} runs; give one run (a run group)")
    image = ion_map(runs, args.mz_bins, args.rt_bins, ms_level=args.ms_level)
    cluster = analysis_cluster(args)
    with cluster_client(cluster) as client:
        (data,) = compute([image.data], client, cluster.task_timeout)
    values = image.copy(data=data)
    title = f"{runs[0].name}, MS{args.ms_level}"
    blank = not np.any(data)
    if blank:
        title += " (no points in these bins)"
    atomic_write(args.plot, lambda tmp: plot_ion_map(values[0], tmp, title=title))
    if blank:  # said even with --quiet: the picture alone looks like a failure to draw
        print(
            f"{args.source}: no points of MS{args.ms_level} spectra in these bins; "
            f"a blank map written to {args.plot}",
            file=sys.stderr,
        )
    elif not args.quiet:
        print(f"ion map written to {args.plot}", file=sys.stderr)
    return 0


QUANTIFY_EXAMPLES = """
  mzpeak-dask quantify a.mzpeak b.mzpeak --targets targets.csv --output q.parquet
  mzpeak-dask quantify runs.zarr --targets targets.csv --output q.csv --plot heatmap.png
  mzpeak-dask quantify runs/*.mzpeak --targets t.parquet --output q.parquet --workers 4
  mzpeak-dask quantify converted/ --targets t.csv --output q.parquet   # a batch's output folder

The target list is MINT's: peak_label, mz_mean, mz_width (ppm), rt_min, rt_max, and optionally
rt_unit (min or s), intensity_threshold and ms_level. A run that cannot be read is named on
stderr after the other runs' rows are written, and the exit status is 1 (when no run can be
read, no table is written).
"""
ION_MAP_EXAMPLES = """
  mzpeak-dask ion-map a.mzpeak --mz-bins 100:1000:900 --rt-bins 0:60:600 --plot map.png
"""


def add_commands(subparsers: Any) -> None:
    """Register ``quantify`` and ``ion-map``."""
    p = command(
        subparsers,
        "quantify",
        "integrate a MINT target list in many runs",
        cmd_quantify,
        QUANTIFY_EXAMPLES,
        description="Targeted quantification: one row per run and target (MINT's peak_area, "
        "peak_max ... and the XIC's trapezoid area and apex), reading only the chunks that "
        "can hold a target.",
    )
    p.add_argument(
        "sources",
        nargs="+",
        metavar="RUN",
        help="mzPeak archives, Zarr stores (every run in them) or run groups; paths or URLs; "
        "a folder holding them (a batch's output), or a bucket prefix ending in /, stands for "
        "every run under it",
    )
    p.add_argument("--targets", required=True, metavar="T.csv", help="CSV or Parquet targets")
    p.add_argument(
        "--output", required=True, metavar="Q.parquet", help="the table, CSV or Parquet by suffix"
    )
    p.add_argument("--plot", metavar="FILE.png", help="heatmap of log peak_area, run x target")
    add_options(p, ClusterOptions, names=ANALYSIS_CLUSTER)

    p = command(
        subparsers,
        "ion-map",
        "a run's summed intensity over RT x m/z bins, as a picture",
        cmd_ion_map,
        ION_MAP_EXAMPLES,
        description="Ion map of one run: intensities summed in RT x m/z bins (as "
        "numpy.histogram2d bins them), drawn log-scaled.",
    )
    p.add_argument("source", metavar="RUN", help="an mzPeak archive or a run group")
    p.add_argument("--mz-bins", type=bins, required=True, metavar="LO:HI:N", help="m/z bins")
    p.add_argument("--rt-bins", type=bins, required=True, metavar="LO:HI:N", help="RT bins, min")
    p.add_argument("--ms-level", type=int, default=1, help="MS level of the spectra (default 1)")
    p.add_argument("--plot", required=True, metavar="FILE.png", help="the picture")
    add_options(p, ClusterOptions, names=ANALYSIS_CLUSTER)


__all__ = ["add_commands", "bins", "cmd_ion_map", "cmd_quantify"]
