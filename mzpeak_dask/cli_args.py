"""Command-line arguments shared by the subcommands of ``mzpeak-dask`` (``cli.py`` and
``export/commands.py``): the option groups and their resolution, command line > ``--config``
file > defaults."""

from __future__ import annotations

import argparse
from typing import Any

from .options import ClusterOptions, ConvertOptions, load_config, resolve


def add_convert_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("encoding (defaults: configs/default.toml)")
    g.add_argument("--layout", choices=["point", "chunked"])
    g.add_argument("--chunk-encoding", choices=["delta", "basic", "numpress"])
    g.add_argument("--chunk-width", type=float, help="chunk width in main-axis units (m/z, min)")
    g.add_argument(
        "--numpress-intensity",
        choices=["slof", "pic"],
        help="store intensities with an MS-Numpress transform (lossy)",
    )
    g.add_argument(
        "--peaks",
        action="store_const",
        const=True,
        help="also store centroided peak lists of profile spectra in spectra_peaks.parquet",
    )
    g.add_argument(
        "--centroids",
        choices=["data", "peaks"],
        help="where centroid-only spectra go: data (default; spectra_data, where every mzPeak "
        "reader looks) or peaks (spectra_peaks only: the reference readers return these "
        "spectra without arrays and do not iterate such archives)",
    )
    g.add_argument(
        "--no-strip-zero-runs",
        dest="strip_zero_runs",
        action="store_const",
        const=False,
        help="keep runs of zero intensities",
    )
    g.add_argument(
        "--no-null-marking",
        dest="null_marking",
        action="store_const",
        const=False,
        help="store zero-intensity points as values instead of nulls",
    )
    g.add_argument("--compression", choices=["zstd", "snappy", "gzip", "lz4", "brotli", "none"])
    g.add_argument("--compression-level", type=int)
    g.add_argument("--data-page-size", type=int, help="Parquet data page size in bytes")
    g.add_argument("--row-group-points", type=int, help="points per row group")
    g.add_argument("--partition-bytes", type=int, help="input bytes per worker task")
    g.add_argument("--partition-items", type=int, help="spectra per worker task (at most)")
    g.add_argument(
        "--unpacked",
        action="store_const",
        const=True,
        help="write the directory form instead of a ZIP",
    )
    g.add_argument("--overwrite", action="store_const", const=True, help="replace existing outputs")


def add_cluster_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cluster")
    g.add_argument(
        "--workers",
        type=int,
        help="local worker processes (default: CPU cores); SLURM jobs with --cluster slurm",
    )
    g.add_argument("--threads-per-worker", type=int)
    g.add_argument("--memory-limit", help="per local worker, e.g. 4GB (default: auto)")
    g.add_argument("--scheduler", help="address of a running Dask scheduler (tcp://HOST:PORT)")
    g.add_argument(
        "--cluster",
        choices=["local", "slurm", "inline"],
        help="local: embedded LocalCluster; slurm: dask-jobqueue; inline: no Dask",
    )
    g.add_argument("--window", type=int, help="partitions in flight (bounds memory)")
    g.add_argument("--no-dashboard", dest="dashboard", action="store_const", const=False)


def add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="TOML config file (see configs/)")
    p.add_argument("-v", "--verbose", action="store_true", help="tracebacks and debug logging")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")


def picked(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    names = cls.defaults().keys()
    return {k: getattr(args, k) for k in names if getattr(args, k, None) is not None}


def options_from(args: argparse.Namespace) -> tuple[ConvertOptions, ClusterOptions]:
    config = load_config(args.config)
    return (
        resolve(ConvertOptions, config, picked(args, ConvertOptions)),
        resolve(ClusterOptions, config, picked(args, ClusterOptions)),
    )


def cluster_from(args: argparse.Namespace) -> ClusterOptions:
    return resolve(ClusterOptions, load_config(args.config), picked(args, ClusterOptions))


__all__ = [
    "add_cluster_options",
    "add_common",
    "add_convert_options",
    "cluster_from",
    "options_from",
    "picked",
]
