"""The ``export-zarr``, ``xic`` and ``tic`` subcommands of ``mzpeak-dask``.

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
from ..storage.outputs import atomic_write, check_output, write_table
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
    table = frame.rename(columns={c: f"{c:.4f}" for c in frame.columns if c != "time"})
    return _formatted(name, table, max_rows, f", ±{ppm:g} ppm")


def _formatted(name: str, frame: Any, max_rows: int, about: str = "") -> str:
    if not len(frame):  # not pandas' "Empty DataFrame" block
        return f"== {name}: no spectra of the MS level (and RT range) asked =="
    body = frame.to_string(max_rows=max_rows, float_format=lambda x: f"{x:.6g}")
    return f"== {name}: {plural(len(frame), 'spectrum', 'spectra')}{about} ==\n{body}"


def xic_table(results: dict[str, Any]) -> Any:
    """Runs' XICs as one long table: run, spectrum_index, time, mz (the target), intensity;
    in run order, then spectrum and target order."""
    parts = []
    for frame in results.values():
        long = frame.reset_index().melt(
            id_vars=["spectrum_index", "time"], var_name="mz", value_name="intensity"
        )
        order = np.lexsort((long["mz"].to_numpy(dtype=float), long["spectrum_index"].to_numpy()))
        parts.append(long.iloc[order])
    table = _runs_table(results, parts, ["spectrum_index", "time", "mz", "intensity"])
    return table.astype({"mz": "float64", "intensity": "float64"})


def tic_table(results: dict[str, Any]) -> Any:
    """Runs' total-ion and base-peak chromatograms as one table: run, spectrum_index, time,
    tic, base_peak_mz, base_peak_intensity."""
    from ..analysis.chromatograms import STATS

    parts = [frame.reset_index() for frame in results.values()]
    return _runs_table(results, parts, ["spectrum_index", "time", *STATS])


def _runs_table(results: dict[str, Any], parts: list[Any], columns: list[str]) -> Any:
    import pandas as pd

    parts = [part.assign(run=name) for name, part in zip(results, parts, strict=True)]
    if not parts:
        return pd.DataFrame(columns=["run", *columns])
    return pd.concat(parts, ignore_index=True)[["run", *columns]]


def _chromatograms(args: argparse.Namespace, analysis: AnalysisOptions, compute: Any) -> dict:
    """``compute(runs, rt, ms_level, client, task_timeout)`` over the runs the command names,
    on its cluster; a retention-time window outside every run refused in one line."""
    from ..analysis.chromatograms import outside
    from ..analysis.runs import as_runs

    check_output(args.output)
    check_output(args.plot)
    rt = tuple(args.rt) if args.rt else None
    level = None if analysis.ms_level == 0 else analysis.ms_level
    runs = as_runs(args.sources)
    if rt is not None and (why := outside(runs, rt, level)):
        raise OptionsError(why)  # one line, not a table without rows per run
    cluster = analysis_cluster(args)
    with cluster_client(cluster) as client:  # none: Dask's threads here
        return compute(runs, rt, level, client, cluster.task_timeout)


def _report(args: argparse.Namespace, results: dict, table: Any, text: Any, plot: Any) -> None:
    """The chromatograms as the command's flags ask: one table (--output), JSON lines
    (--json) or printed tables; and a picture (--plot)."""
    if args.output:
        rows = table(results)
        write_table(rows, args.output)
        if not args.quiet:
            print(f"{plural(len(rows), 'row')} ({plural(len(results), 'run')}) written to "
                  f"{args.output}", file=sys.stderr)  # fmt: skip
    elif args.json:
        for name, frame in results.items():
            doc = json.loads(frame.to_json(orient="split"))
            print(json.dumps({"run": name, args.command: doc}))
    elif not args.quiet:
        print("\n\n".join(text(name, frame) for name, frame in results.items()))
    if args.plot:
        atomic_write(args.plot, lambda tmp: plot(results, tmp))
        if not args.quiet and not args.json:
            print(f"plot written to {args.plot}", file=sys.stderr)


def cmd_xic(args: argparse.Namespace) -> int:
    from ..analysis import plot_xic, xic

    analysis = options(args, AnalysisOptions)

    def compute(runs, rt, level, client, task_timeout):
        return xic(runs, args.mz, ppm=analysis.ppm, rt=rt, ms_level=level, client=client,
                   task_timeout=task_timeout)  # fmt: skip

    results = _chromatograms(args, analysis, compute)
    _report(
        args,
        results,
        xic_table,
        lambda name, frame: format_xic(name, frame, analysis.ppm, analysis.max_rows),
        lambda results, path: plot_xic(results, path, ppm=analysis.ppm),
    )
    return 0


def cmd_tic(args: argparse.Namespace) -> int:
    from ..analysis import plot_tic, spectrum_stats

    analysis = options(args, AnalysisOptions)

    def compute(runs, rt, level, client, task_timeout):
        return spectrum_stats(runs, rt=rt, ms_level=level, client=client,
                              task_timeout=task_timeout)  # fmt: skip

    def text(name: str, frame: Any) -> str:
        return _formatted(name, frame, analysis.max_rows)

    _report(args, _chromatograms(args, analysis, compute), tic_table, text, plot_tic)
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


TIC_EXAMPLES = """
  mzpeak-dask tic runs.zarr c.mzpeak --plot tic.png
  mzpeak-dask tic converted/ --output tics.parquet --workers 4
  mzpeak-dask tic a.mzpeak --ms-level 2 --rt 29 30 --json

Without --workers, --scheduler or --cluster (nor those keys under [cluster] of --config),
the chromatograms are computed on Dask's threads in this process.
"""


def add_commands(subparsers: Any) -> None:
    """Register ``export-zarr``, ``xic`` and ``tic`` on an argparse subparsers object."""
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
        "--mz",
        type=bounded(float, ABOVE_0),
        action="append",
        required=True,
        help="target m/z (repeatable)",
    )
    _chromatogram_arguments(p, "XICs", "mz, intensity", ())
    p = command(
        subparsers,
        "tic",
        "total-ion and base-peak chromatograms across runs",
        cmd_tic,
        TIC_EXAMPLES,
        description="Total-ion and base-peak chromatograms across many runs (archives and Zarr "
        "stores): per spectrum its summed intensity and its most intense point.",
    )
    _chromatogram_arguments(p, "chromatograms", "tic, base_peak_mz, base_peak_intensity", ("ppm",))


def _chromatogram_arguments(p: Any, what: str, columns: str, without: tuple[str, ...]) -> None:
    """The runs, their selection and the outputs of ``xic`` and ``tic``."""
    p.add_argument(
        "sources",
        nargs="+",
        metavar="ARCHIVE_OR_STORE",
        help="mzPeak archives, Zarr stores of export-zarr (every run in them), run groups or "
        "RUN.zarr.zip files; paths or URLs; a folder holding them (a batch's output), or a "
        "bucket prefix ending in /, stands for every run under it",
    )
    p.add_argument(
        "--rt", type=float, nargs=2, metavar=("LOW", "HIGH"), help="retention time range, minutes"
    )
    p.add_argument("--plot", metavar="FILE.png", help=f"draw the {what} with matplotlib")
    p.add_argument("--json", action="store_true", help=f"print each run's {what} as JSON")
    p.add_argument(
        "--output",
        metavar="FILE",
        help=f"write every run's {what} to one table instead of printing them: run, "
        f"spectrum_index, time, {columns}; Parquet (.parquet, .pq) or CSV by the suffix",
    )
    names = tuple(n for n in ("ppm", "ms_level", "max_rows") if n not in without)
    add_options(p, AnalysisOptions, "chromatograms", names)
    add_options(p, ClusterOptions, names=ANALYSIS_CLUSTER, kinds=XIC_KINDS)


__all__ = [
    "add_commands",
    "cmd_export_zarr",
    "cmd_tic",
    "cmd_xic",
    "format_xic",
    "tic_table",
    "xic_table",
]
