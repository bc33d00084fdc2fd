"""The ``export-zarr`` and ``xic`` subcommands of ``mzpeak-dask``.

Conventions as for every command: handlers return an exit code, errors are ``MzPeakDaskError``
subclasses (printed as one line by :func:`mzpeak_dask.cli.main`), options follow command line >
``--config`` > defaults.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from ..errors import OptionsError
from ..options import ABOVE_0, AnalysisOptions, ClusterOptions, ConvertOptions, ZarrOptions
from ..parallel.cluster import cluster_client
from ..support.outputs import atomic_write, write_table
from ..support.pathtext import plural
from .args import GROUP_FLAGS, add_options, analysis_cluster, bounded, command, options


def cmd_export_zarr(args: argparse.Namespace) -> int:
    from ..export.zarr import to_zarr

    zarr_options = options(args, ZarrOptions)
    results = to_zarr(
        args.archives,
        args.store,
        cluster=options(args, ClusterOptions),
        chunk_width=options(args, ConvertOptions).chunk_width,
        overwrite=zarr_options.overwrite,
        compression=zarr_options.compression,
        chunk_points=zarr_options.zarr_chunk_points,
        single_file=zarr_options.single_file,
    )
    for r in results:
        if args.json:
            print(json.dumps(r.__dict__))
        elif not args.quiet:
            print(
                f"{r.archive} -> {r.group}: {plural(r.spectra, 'spectrum', 'spectra')}, "
                f"{plural(r.chunks, 'chunk')} in {plural(r.zarr_chunks, 'Zarr chunk')}, "
                f"{plural(r.points, 'point')} in {r.seconds:.1f} s"
            )
    return 0


def format_xic(name: str, frame: Any, ppm: float, max_rows: int) -> str:
    """A compact table of one run's XICs: time, then one column per target."""
    if not len(frame):  # not pandas' "Empty DataFrame" block
        return f"== {name}: no spectra of the MS level (and RT range) asked =="
    table = frame.rename(columns={c: f"{c:.4f}" for c in frame.columns if c != "time"})
    body = table.to_string(max_rows=max_rows, float_format=lambda x: f"{x:.6g}")
    return f"== {name}: {plural(len(frame), 'spectrum', 'spectra')}, ±{ppm:g} ppm ==\n{body}"


def xic_table(results: dict[str, Any]) -> Any:
    """Runs' XICs as one long table: run, spectrum_index, time, mz (the target), intensity;
    in run order, then spectrum and target order."""
    import pandas as pd

    parts = []
    for name, frame in results.items():
        long = frame.reset_index().melt(
            id_vars=["spectrum_index", "time"], var_name="mz", value_name="intensity"
        )
        order = np.lexsort((long["mz"].to_numpy(dtype=float), long["spectrum_index"].to_numpy()))
        parts.append(long.iloc[order].assign(run=name))
    columns = ["run", "spectrum_index", "time", "mz", "intensity"]
    if not parts:
        return pd.DataFrame(columns=columns)
    table = pd.concat(parts, ignore_index=True)[columns]
    return table.astype({"mz": "float64", "intensity": "float64"})


def cmd_xic(args: argparse.Namespace) -> int:
    from ..analysis import plot_xic, xic
    from ..analysis.chromatograms import outside
    from ..analysis.runs import as_runs

    analysis = options(args, AnalysisOptions)
    rt = tuple(args.rt) if args.rt else None
    level = None if analysis.ms_level == 0 else analysis.ms_level
    runs = as_runs(args.sources)
    if rt is not None and (why := outside(runs, rt, level)):
        raise OptionsError(why)  # one line, not a table without rows per run
    cluster = analysis_cluster(args)
    with cluster_client(cluster) as client:  # none: Dask's threads here
        results = xic(
            runs,
            args.mz,
            ppm=analysis.ppm,
            rt=rt,
            ms_level=level,
            client=client,
            task_timeout=cluster.task_timeout,
        )
    if args.output:
        table = xic_table(results)
        write_table(table, args.output)
        if not args.quiet:
            print(f"{plural(len(table), 'row')} ({plural(len(results), 'run')}) written to "
                  f"{args.output}", file=sys.stderr)  # fmt: skip
    elif args.json:
        for name, frame in results.items():
            print(json.dumps({"run": name, "xic": json.loads(frame.to_json(orient="split"))}))
    elif not args.quiet:
        text = (format_xic(n, f, analysis.ppm, analysis.max_rows) for n, f in results.items())
        print("\n\n".join(text))
    if args.plot:
        atomic_write(args.plot, lambda tmp: plot_xic(results, tmp, ppm=analysis.ppm))
        if not args.quiet and not args.json:
            print(f"plot written to {args.plot}", file=sys.stderr)
    return 0


# the [cluster] options that act on export-zarr and xic (--window paces conversions only)
ANALYSIS_CLUSTER = tuple(n for n in GROUP_FLAGS[ClusterOptions] if n != "window")
# what each value of --cluster does in export-zarr and in xic
ASKED = (
    "but a LocalCluster when a worker count is given, or a running scheduler when one is "
    "named (by a flag or --config)"
)
EXPORT_KINDS = {
    "auto": f"in this process, one task at a time, {ASKED}",
    "local": "a LocalCluster of worker processes on this machine",
    "slurm": "SLURM jobs through dask-jobqueue (the [slurm] table of --config)",
    "inline": "in this process, one task at a time, without Dask",
}
XIC_KINDS = {
    **EXPORT_KINDS,
    "auto": f"in this process, on Dask's threads, {ASKED}",
    "inline": "in this process, on Dask's threads",
}

EXPORT_EXAMPLES = """
  mzpeak-dask export-zarr a.mzpeak b.mzpeak runs.zarr
  mzpeak-dask export-zarr a.mzpeak runs.zarr --single-file --workers 2
  mzpeak-dask export-zarr a.mzpeak s3://bucket/runs.zarr
"""
XIC_EXAMPLES = """
  mzpeak-dask xic runs.zarr --mz 445.12
  mzpeak-dask xic runs.zarr c.mzpeak --mz 445.12 --mz 524.26 --ppm 5 --rt 10 20
  mzpeak-dask xic a.mzpeak --mz 445.12 --plot xic.png
  mzpeak-dask xic runs.zarr --mz 445.12 --json --workers 4

Without --workers, --scheduler or --cluster (nor those keys under [cluster] of --config),
the chromatograms are computed on Dask's threads in this process.
"""


def add_commands(subparsers: Any) -> None:
    """Register ``export-zarr`` and ``xic`` on an argparse subparsers object."""
    help = "export archives to a Zarr v3 store with the mzPeak chunks"
    p = command(
        subparsers,
        "export-zarr",
        help,
        cmd_export_zarr,
        EXPORT_EXAMPLES,
        description="Export mzPeak archives to a Zarr v3 store: one group per run, whose "
        "chunks are the mzPeak chunks (variable-size, 'rectilinear' chunk grids).",
    )
    p.add_argument("archives", nargs="+", metavar="ARCHIVE", help="mzPeak archives")
    p.add_argument(
        "store",
        metavar="STORE.zarr",
        help="Zarr store folder (created if needed) or URL (s3://bucket/runs.zarr)",
    )
    p.add_argument("--json", action="store_true", help="print results as JSON lines")
    add_options(p, ZarrOptions, "export")
    add_options(p, ConvertOptions, "chunks of point-layout archives", ("chunk_width",))
    add_options(p, ClusterOptions, names=ANALYSIS_CLUSTER, kinds=EXPORT_KINDS)

    p = command(
        subparsers,
        "xic",
        "extracted-ion chromatograms across runs",
        cmd_xic,
        XIC_EXAMPLES,
        description="Extracted-ion chromatograms of one or more m/z targets across many runs "
        "(archives and Zarr stores), reading only the chunks that can hold the targets.",
    )
    p.add_argument(
        "sources",
        nargs="+",
        metavar="ARCHIVE_OR_STORE",
        help="mzPeak archives, Zarr stores of export-zarr (every run in them), run groups or "
        "RUN.zarr.zip files; paths or URLs; a folder holding them (a batch's output), or a "
        "bucket prefix ending in /, stands for every run under it",
    )
    p.add_argument(
        "--mz",
        type=bounded(float, ABOVE_0),
        action="append",
        required=True,
        help="target m/z (repeatable)",
    )
    p.add_argument(
        "--rt", type=float, nargs=2, metavar=("LOW", "HIGH"), help="retention time range, minutes"
    )
    p.add_argument("--plot", metavar="FILE.png", help="draw the XICs with matplotlib")
    p.add_argument("--json", action="store_true", help="print each run's XIC as JSON")
    p.add_argument(
        "--output",
        metavar="FILE",
        help="write every run's XICs to one table instead of printing them: run, "
        "spectrum_index, time, mz, intensity; Parquet (.parquet, .pq) or CSV by the suffix",
    )
    add_options(p, AnalysisOptions, "chromatograms")
    add_options(p, ClusterOptions, names=ANALYSIS_CLUSTER, kinds=XIC_KINDS)


__all__ = ["add_commands", "cmd_export_zarr", "cmd_xic", "format_xic", "xic_table"]
