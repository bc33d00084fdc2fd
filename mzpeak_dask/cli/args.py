"""The command-line flags of the option groups, generated from the dataclasses of
:mod:`mzpeak_dask.options`, and their resolution: command line > ``--config`` file > defaults.

A flag is the option's name with dashes; a true default turns off with ``--no-NAME``, a false
one on with ``--NAME``; values are typed like the option's default and offered the option's
``choices``. A flag not given is None, so that the config file and the defaults decide.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import fields
from typing import Any

from ..options import (
    AnalysisOptions,
    BatchOptions,
    ClusterOptions,
    ConvertOptions,
    StorageOptions,
    ZarrOptions,
    load_config,
    resolve,
)
from ..parallel.cluster import KINDS

# the options each group puts on the command line, with their help
CONVERT_FLAGS = {
    "layout": "one row per data point, or one row per chunk",
    "chunk_encoding": "chunked layout: how the m/z of a chunk are stored",
    "chunk_width": "chunk width in main-axis units (m/z, min)",
    "numpress_intensity": "store intensities with an MS-Numpress transform (lossy)",
    "peaks": "also store centroided peak lists of profile spectra in spectra_peaks.parquet",
    "centroids": "where centroid-only spectra go: data (spectra_data, where every mzPeak "
    "reader looks) or peaks (spectra_peaks only: the reference readers return these spectra "
    "without arrays and do not iterate such archives)",
    "strip_zero_runs": "keep runs of zero intensities",
    "null_marking": "store zero-intensity points as values instead of nulls",
    "compression": "Parquet compression",
    "compression_level": "Parquet compression level",
    "data_page_size": "Parquet data page size in bytes",
    "row_group_points": "points per row group",
    "partition_bytes": "input bytes per worker task (about; a run is cut in equal shares)",
    "partition_items": "spectra per worker task (at most)",
    "unpacked": "write the directory form instead of a ZIP",
    "overwrite": "replace existing outputs",
}
CLUSTER_FLAGS = {
    "workers": "local worker processes (default: CPU cores); SLURM jobs with --cluster slurm",
    "threads_per_worker": "threads of each worker",
    "memory_limit": "per local worker, e.g. 4GB",
    "scheduler": "address of a running Dask scheduler (tcp://HOST:PORT)",
    "cluster": "local: embedded LocalCluster; slurm: dask-jobqueue; inline: no Dask",
    "window": "tasks in flight before more are sent (bounds memory; a run finished on "
    "workers sends its partitions together)",
    "dashboard": "serve the Dask dashboard of a cluster started here (needs bokeh)",
}
BATCH_FLAGS = {
    "resume": "skip inputs whose output is valid and made from the same input",
    "retries": "extra attempts for failed inputs",
    "reports": "only batch_report.json (no HTML report, no catalog)",
}
ZARR_FLAGS = {
    "compression": "signal arrays: zstd, or none (about 30%% faster to write and read)",
    "overwrite": "replace existing run groups",
    "single_file": "one file per run, STORE/RUN.zarr.zip (a ZIP store), instead of a group",
    "zarr_chunk_points": "points of a Zarr chunk, about (whole spectra; a run's chunks grow "
    "so that it stays within 100 files)",
}
ANALYSIS_FLAGS = {
    "ppm": "m/z tolerance",
    "ms_level": "MS level (0: all)",
    "max_rows": "rows shown per run",
}
GROUP_FLAGS: dict[type, dict[str, str]] = {
    ConvertOptions: CONVERT_FLAGS,
    ClusterOptions: CLUSTER_FLAGS,
    BatchOptions: BATCH_FLAGS,
    ZarrOptions: ZARR_FLAGS,
    AnalysisOptions: ANALYSIS_FLAGS,
}


def _value_type(cls: type, name: str, default: Any) -> type:
    if default is not None:
        return type(default)
    annotation = str(next(f.type for f in fields(cls) if f.name == name))
    return int if annotation.startswith("int") else float if annotation.startswith("float") else str


def add_options(
    parser: argparse.ArgumentParser,
    cls: type,
    title: str | None = None,
    names: tuple[str, ...] | None = None,
) -> None:
    """Add the flags of option group ``cls`` (only ``names`` when given) to ``parser``."""
    helps = GROUP_FLAGS[cls]
    group = parser.add_argument_group(title or cls.section)
    defaults = cls.defaults()
    chosen = tuple(helps) if names is None else names
    for name in chosen:
        default, flag, help = defaults[name], "--" + name.replace("_", "-"), helps[name]
        if isinstance(default, bool):  # the switch away from the default, and (unlisted)
            # its opposite, which overrides a config file that set the other value
            switch, back = (flag.replace("--", "--no-", 1), flag)[:: 1 if default else -1]
            group.add_argument(
                switch, dest=name, action="store_const", const=not default, help=help
            )
            group.add_argument(
                back, dest=name, action="store_const", const=default, help=argparse.SUPPRESS
            )
            continue
        help += "" if default is None else f" (default: {default})"
        if name in cls.choices:
            allowed = [c for c in cls.choices[name] if c is not None]
            group.add_argument(flag, choices=allowed, help=help)
        else:
            group.add_argument(flag, type=_value_type(cls, name, default), help=help)
    flags = dict(parser.get_default("option_flags") or {})
    flags[cls] = flags.get(cls, ()) + chosen
    parser.set_defaults(option_flags=flags)


def command(subparsers: Any, name: str, help: str, handler: Any) -> argparse.ArgumentParser:
    """A subcommand run by ``handler(args)``, with the flags every command has."""
    p = subparsers.add_parser(name, help=help)
    p.add_argument("--config", help="TOML config file (see configs/)")
    p.add_argument("-v", "--verbose", action="store_true", help="tracebacks and debug logging")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    p.add_argument(
        "--storage-options",
        type=_json_object,
        metavar="JSON",
        help="keyword arguments of the fsspec filesystem of s3://, gs://, az://, https:// URLs "
        "(credentials and endpoints come from each store's environment). A command line is "
        "visible to other users of the machine until the command hides this value: put "
        "secrets in the config file's [storage] table or the environment",
    )
    p.set_defaults(func=handler)
    return p


def _json_object(value: str) -> dict[str, Any]:
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError("not a JSON object")
    return parsed


def storage_options(args: argparse.Namespace) -> StorageOptions:
    """The storage options of this command (``--storage-options`` over ``[storage]``)."""
    given = {"options": getattr(args, "storage_options", None)}
    return resolve(StorageOptions, load_config(getattr(args, "config", None)), given)


def given(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The options of group ``cls`` given on this command line."""
    names = (getattr(args, "option_flags", None) or {}).get(cls, ())
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def options(args: argparse.Namespace, cls: type) -> Any:
    """Option group ``cls`` for this command: command line > --config file > defaults."""
    return resolve(cls, load_config(args.config), given(args, cls))


def cluster_asked(args: argparse.Namespace) -> bool:
    """Whether the command line or the config file asks where to run: workers, a scheduler,
    or a kind of cluster (local, slurm, inline). Other [cluster] keys only shape a cluster."""
    config = load_config(args.config)
    asked = {**config.get(ClusterOptions.section, {}), **given(args, ClusterOptions)}
    return any(asked.get(key) is not None for key in ("workers", "scheduler", "cluster"))


def analysis_cluster(args: argparse.Namespace) -> ClusterOptions:
    """The cluster of an analysis: one only when the command line or the config file asks
    for one (workers, a scheduler, or a kind of cluster: local or slurm); otherwise inline,
    on Dask's threads in this process."""
    config = load_config(args.config)
    asked = {**config.get(ClusterOptions.section, {}), **given(args, ClusterOptions)}
    cluster = resolve(ClusterOptions, config, given(args, ClusterOptions))
    wanted = asked.get("workers") or asked.get("scheduler") or asked.get("cluster") in KINDS
    return cluster if wanted else cluster.updated(cluster="inline")


__all__ = [
    "add_options",
    "analysis_cluster",
    "cluster_asked",
    "command",
    "given",
    "options",
    "storage_options",
]
