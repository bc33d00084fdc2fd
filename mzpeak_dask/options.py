"""Options for every stage, as frozen dataclasses with their defaults written once.

One precedence rule everywhere: **command line > config file > built-in defaults**. A config
file is TOML with one table per option group (``[convert]``, ``[cluster]``, ``[slurm]``,
``[batch]``); see ``configs/default.toml`` for every key with its default and meaning.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import Any, Self

from .errors import OptionsError

LAYOUTS = ("point", "chunked")
CHUNK_ENCODINGS = ("delta", "basic", "numpress")
NUMPRESS_INTENSITY = (None, "slof", "pic")
COMPRESSIONS = ("zstd", "snappy", "gzip", "lz4", "brotli", "none")


class _Options:
    """Shared dict/TOML conversion for the option dataclasses."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - known)
        if unknown:
            raise OptionsError(f"unknown {cls.section} option(s): {', '.join(unknown)}")
        return cls(**data)

    def updated(self, **changes: Any) -> Self:
        """A copy with ``changes`` applied; None values mean "not given" and are skipped."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})  # type: ignore[type-var]

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        out = {}
        for f in fields(cls):  # type: ignore[arg-type]
            if f.default is not MISSING:
                out[f.name] = f.default
            elif f.default_factory is not MISSING:
                out[f.name] = f.default_factory()
        return out


@dataclass(frozen=True)
class ConvertOptions(_Options):
    """How one run is encoded and written."""

    section = "convert"

    layout: str = "point"
    chunk_encoding: str = "delta"
    chunk_width: float = 50.0
    numpress_intensity: str | None = None
    strip_zero_runs: bool = True
    null_marking: bool = True
    null_marking_ppm: float = 0.02  # a zero pair is null-marked only if rebuilt within this
    peaks: bool = False  # also store centroided peak lists of profile spectra (spectra_peaks)
    # where centroid-only spectra go: "data" (spectra_data, in either layout: the specification's
    # `peaks` kind is a more refined view of signal that is also in `data arrays`, format doc
    # sections 2.3 and 9 #9; the reference writer does the same and the reference readers
    # look only there), or "peaks" (spectra_peaks only; the reference readers return such
    # spectra without arrays and do not iterate such archives)
    centroids: str = "data"
    compression: str = "zstd"
    compression_level: int = 3
    data_page_size: int = 1 << 20
    row_group_points: int = 8192  # see tests/benchmarks/bench_single_run.py for the trade-off
    unpacked: bool = False
    overwrite: bool = False
    partition_bytes: int = 8 << 20
    partition_items: int = 1000

    def __post_init__(self) -> None:
        _choice("layout", self.layout, LAYOUTS)
        _choice("chunk_encoding", self.chunk_encoding, CHUNK_ENCODINGS)
        _choice("numpress_intensity", self.numpress_intensity, NUMPRESS_INTENSITY)
        _choice("compression", self.compression, COMPRESSIONS)
        _choice("centroids", self.centroids, ("data", "peaks"))
        for name in ("data_page_size", "row_group_points", "partition_bytes", "partition_items"):
            if getattr(self, name) < 1:
                raise OptionsError(f"{name} must be a positive integer")
        if not self.chunk_width > 0:
            raise OptionsError("chunk_width must be positive")

    def content_options(self) -> dict[str, Any]:
        """The options that shape the archive's content (recorded in its data processing);
        how the work was split and where it was written do not."""
        skip = {"partition_bytes", "partition_items", "overwrite", "unpacked"}
        return {k: v for k, v in self.to_dict().items() if k not in skip}

    @property
    def centroids_in_peaks(self) -> bool:
        """Whether centroid-only spectra are written to spectra_peaks (opt-in)."""
        return self.centroids == "peaks"

    @property
    def lossy(self) -> bool:
        return self.chunk_encoding == "numpress" or self.numpress_intensity is not None


@dataclass(frozen=True)
class ClusterOptions(_Options):
    """Where the work runs: an embedded LocalCluster, a running scheduler, or SLURM."""

    section = "cluster"

    cluster: str = "local"  # "local" | "slurm" | "inline" (no Dask: this process only)
    workers: int | None = None  # local: worker processes (default: CPU cores); slurm: jobs
    threads_per_worker: int = 1
    memory_limit: str = "auto"
    scheduler: str | None = None  # address of a running scheduler, e.g. tcp://host:8786
    window: int | None = None  # partitions in flight (default: 2 per worker thread + 2)
    dashboard: bool = True
    slurm: dict[str, Any] = field(default_factory=dict)  # dask-jobqueue SLURMCluster keywords

    def __post_init__(self) -> None:
        _choice("cluster", self.cluster, ("local", "slurm", "inline"))
        if self.workers is not None and self.workers < 1:
            raise OptionsError("workers must be at least 1")

    def worker_count(self) -> int:
        return self.workers or os.cpu_count() or 1


def _choice(name: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        shown = ", ".join("none" if a is None else str(a) for a in allowed)
        raise OptionsError(f"{name} must be one of {shown} (got {value!r})")


def load_config(path: str | os.PathLike | None) -> dict[str, dict[str, Any]]:
    """Read a TOML config file into ``{section: {key: value}}`` (empty when ``path`` is None)."""
    if path is None:
        return {}
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise OptionsError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise OptionsError(f"{path}: invalid TOML ({exc})") from None
    if not all(isinstance(v, dict) for v in data.values()):
        raise OptionsError(f"{path}: every top-level key must be a [section] table")
    return data


def resolve(cls: type, config: dict[str, dict[str, Any]], cli: dict[str, Any]) -> Any:
    """Build ``cls`` with the one precedence rule: command line > config file > defaults.

    ``cli`` holds only the options given on the command line (None means not given).
    """
    section = dict(config.get(cls.section, {}))
    if cls is ClusterOptions and "slurm" in config:
        section["slurm"] = {**section.get("slurm", {}), **config["slurm"]}
    merged = {**section, **{k: v for k, v in cli.items() if v is not None}}
    return cls.from_dict(merged)
