"""The command-line flags of the option groups, generated from the dataclasses of
:mod:`mzpeak_dask.options`, and their resolution: command line > ``--config`` file > defaults.

A flag is the option's name with dashes; a true default turns off with ``--no-NAME``, a false
one on with ``--NAME``; values are typed like the option's default and offered the option's
``choices``. A flag not given is None, so that the config file and the defaults decide.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import textwrap
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from ..errors import OptionsError
from ..options import (
    AnalysisOptions,
    BatchOptions,
    ClusterOptions,
    ConvertOptions,
    Limit,
    StorageOptions,
    ZarrOptions,
    load_config,
    resolve,
)

# the options each group puts on the command line, with their help
CONVERT_FLAGS = {
    "layout": "one row per data point, or one row per chunk",
    "chunk_encoding": "chunked layout: how the m/z of a chunk are stored",
    "chunk_width": "chunk width in main-axis units (m/z, min)",
    "numpress_intensity": "chunked layout: store intensities with an MS-Numpress transform (lossy)",
    "peaks": "also store centroided peak lists of profile spectra in spectra_peaks.parquet",
    "centroids": "where centroid-only spectra go: data (spectra_data, where every mzPeak "
    "reader looks) or peaks (spectra_peaks only: the reference readers return these spectra "
    "without arrays and do not iterate such archives)",
    "strip_zero_runs": "keep runs of zero intensities",
    "null_marking": "store zero-intensity points as values instead of nulls",
    "compression": "Parquet compression",
    "compression_level": "Parquet compression level: zstd 1-22, gzip 1-9, brotli 1-11 "
    "(snappy and lz4 take none)",
    "data_page_size": "Parquet data page size (bytes, or with a unit: 1MiB)",
    "row_group_points": "points per row group",
    "partition_bytes": "input per worker task, about (bytes, or with a unit: 12MiB); a run is "
    "cut in equal shares, whose edges end row groups",
    "partition_items": "spectra per worker task (at most)",
    "parser": "how mzML and mzMLb are read: lean (lxml and numpy) or pyteomics (its generic "
    "XML walk, slower); both give the same archive",
    "unpacked": "write the directory form instead of a ZIP",
    "thermo_centroid": "Thermo .raw: take each scan's centroid stream instead of the scan as "
    "stored (scans without one are kept as stored)",
    "overwrite": "replace existing outputs",
}
CLUSTER_FLAGS = {
    "workers": "local worker processes (default: CPU cores); SLURM jobs with --cluster slurm",
    "threads_per_worker": "threads of each worker",
    "memory_limit": "per local worker, e.g. 4GB",
    "scheduler": "address of a running Dask scheduler (tcp://HOST:PORT)",
    "cluster": "where the work runs",  # the choices' meanings are added from CLUSTER_KINDS
    "window": "tasks sent to the workers before another run starts (default: 2 per worker "
    "thread + 2); lower it if the workers run short of memory",
    "dashboard": "serve the Dask dashboard of a cluster started here (needs bokeh)",
    "start_timeout": "seconds a cluster may take to start (or a scheduler to answer)",
    "task_timeout": "seconds the cluster may go without finishing a task before the call stops",
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
# what each value of --cluster means for a conversion (convert, batch); the commands that
# read archives (export-zarr, xic) say what it means for them
CLUSTER_KINDS = {
    "auto": "in this process when the work is small, else a LocalCluster (decided once, "
    "from the input size)",
    "local": "a LocalCluster of worker processes on this machine",
    "slurm": "SLURM jobs through dask-jobqueue (the [slurm] table of --config)",
    "inline": "in this process, without Dask",
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


# options counted in bytes: shown with a unit, and given with one or without
SIZE_OPTIONS = ("data_page_size", "partition_bytes")
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9}
_UNITS |= {"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}


def human_bytes(count: int) -> str:
    """``count`` bytes in the largest binary unit that divides it (``12 MiB``), else bytes."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count:,} bytes"


def byte_count(value: str) -> int:
    """A size typed on the command line: ``12582912``, ``12MiB``, ``12 MiB``, ``500kB``."""
    number = value.strip().lower().replace(" ", "")
    unit = number.lstrip("0123456789.")
    digits = number[: len(number) - len(unit)]
    if unit not in _UNITS or not digits:
        raise argparse.ArgumentTypeError(
            f"not a size: {value!r} (bytes, or a number with B, kB, MB, GB, KiB, MiB or GiB)"
        )
    try:
        count = float(digits) * _UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {value!r}") from None
    if count != int(count):
        raise argparse.ArgumentTypeError(f"not a whole number of bytes: {value!r}")
    return int(count)


def _shown(name: str, default: Any) -> str:
    return human_bytes(default) if name in SIZE_OPTIONS else str(default)


def bounded(kind: Callable[[str], Any], limit: Limit | None) -> Callable[[str], Any]:
    """The type of a number flag: ``kind`` (int, float or :func:`byte_count`) parses the
    value, which must then be within ``limit``; argparse prints the message of a refusal."""

    def number(value: str) -> Any:
        try:
            parsed = kind(value)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"not {what}: {value!r}") from None
        if isinstance(parsed, float) and not math.isfinite(parsed):
            raise argparse.ArgumentTypeError(f"not a finite number: {value!r}")
        if limit is not None and not limit.allows(parsed):
            raise argparse.ArgumentTypeError(f"must be {limit} (got {value})")
        return parsed

    number.__name__ = getattr(kind, "__name__", "number")  # argparse names it in messages
    return number


def add_options(
    parser: argparse.ArgumentParser,
    cls: type,
    title: str | None = None,
    names: tuple[str, ...] | None = None,
    kinds: dict[str, str] | None = None,
) -> None:
    """Add the flags of option group ``cls`` (only ``names`` when given) to ``parser``;
    ``kinds`` says what each value of ``--cluster`` does in this command."""
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
        if name in cls.choices:
            allowed = [c for c in cls.choices[name] if c is not None]
            if name == "cluster" and cls is ClusterOptions:
                meaning = kinds or CLUSTER_KINDS
                help += ": " + "; ".join(f"{c}: {meaning[c]}" for c in allowed)
            help += "" if default is None else f" (default: {_shown(name, default)})"
            group.add_argument(flag, choices=allowed, help=help)
        else:
            help += "" if default is None else f" (default: {_shown(name, default)})"
            kind = byte_count if name in SIZE_OPTIONS else _value_type(cls, name, default)
            metavar = "SIZE" if name in SIZE_OPTIONS else "N" if kind is int else None
            if kind is not str:
                kind = bounded(kind, cls.limits.get(name))
            group.add_argument(flag, type=kind, metavar=metavar, help=help)
    flags = dict(parser.get_default("option_flags") or {})
    flags[cls] = flags.get(cls, ()) + chosen
    parser.set_defaults(option_flags=flags)


def command(
    subparsers: Any,
    name: str,
    help: str,
    handler: Any,
    examples: str,
    description: str | None = None,
    quiet: bool = True,
    storage: bool = True,
) -> argparse.ArgumentParser:
    """A subcommand run by ``handler(args)``, with the flags every command has: ``--config``
    and ``--verbose``; ``--quiet`` and ``--storage-options`` where they act (``quiet``,
    ``storage``). ``examples`` are shown at the end of its help."""
    p = subparsers.add_parser(
        name,
        help=help,
        description=textwrap.fill(description or help[0].upper() + help[1:] + ".", 88),
        epilog="examples:\n" + examples.strip("\n"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", metavar="FILE", help="TOML config file (see configs/default.toml)")
    p.add_argument("-v", "--verbose", action="store_true", help="tracebacks and debug logging")
    if quiet:
        p.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    if storage:
        p.add_argument(
            "--storage-options",
            type=_json_object,
            metavar="JSON",
            help="keyword arguments of the fsspec filesystem of s3://, gs://, az://, https:// "
            "URLs (credentials and endpoints come from each store's environment). A command "
            "line is visible to other users of the machine until the command hides this "
            "value: put secrets in the config file's [storage] table or the environment",
        )
    p.set_defaults(func=handler, quiet=False)
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
    """Option group ``cls`` for this command: command line > --config file > defaults. An
    error that names an option as a keyword (``layout='chunked'``) names its flag instead
    (``--layout chunked``)."""
    try:
        return resolve(cls, load_config(args.config), given(args, cls))
    except OptionsError as exc:
        raise OptionsError(_as_flags(str(exc), cls)) from None


def _as_flags(message: str, cls: type) -> str:
    names = "|".join(f.name for f in fields(cls))
    return re.sub(
        rf"\b({names})=('?)([^' :,]*)\2",
        lambda m: f"--{m.group(1).replace('_', '-')} {m.group(3)}",
        message,
    )


def said(exc: BaseException) -> str:
    """The one line the command prints for ``exc``: its command-line wording when it has one
    (an API error names the API's parameter, the command its flag), passwords hidden."""
    from ..support.pathtext import text

    return text(getattr(exc, "command_line", None) or exc)


def analysis_cluster(args: argparse.Namespace) -> ClusterOptions:
    """The cluster of an analysis: ``auto`` runs it in this process (an analysis reads a few
    row groups of each run), unless a worker count or a scheduler is given."""
    from ..parallel.where import resolve as where

    return where(options(args, ClusterOptions), 0)


__all__ = [
    "CLUSTER_KINDS",
    "add_options",
    "byte_count",
    "analysis_cluster",
    "command",
    "given",
    "human_bytes",
    "options",
    "said",
    "storage_options",
]
