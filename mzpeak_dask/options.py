"""Options for every stage, as frozen dataclasses with their defaults written once.

One precedence rule everywhere: **command line > config file > built-in defaults**. A config
file is TOML with one table per option group — ``[convert]``, ``[cluster]``, ``[slurm]``,
``[batch]``, ``[zarr]``, ``[analysis]``, ``[storage]`` — and ``configs/default.toml`` lists every
key with its default and meaning (a test keeps the two equal). The command-line flags are the
same names with dashes; their choices come from the tuples below.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Iterator
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from typing import Any, ClassVar, Self

from .errors import OptionsError

LAYOUTS = ("point", "chunked")
CHUNK_ENCODINGS = ("delta", "basic", "numpress")
NUMPRESS_INTENSITY = (None, "slof", "pic")
COMPRESSIONS = ("zstd", "snappy", "gzip", "lz4", "brotli", "none")
CENTROIDS = ("data", "peaks")
PARSERS = ("lean", "pyteomics")
CLUSTERS = ("auto", "local", "slurm", "inline")
ZARR_COMPRESSIONS = ("zstd", "none")
# the compression levels each Parquet codec takes (the others take none)
COMPRESSION_LEVELS = {"zstd": (1, 22), "gzip": (1, 9), "brotli": (1, 11)}


@dataclass(frozen=True)
class Limit:
    """The values a number option takes: from ``low`` (excluded when ``above``) to ``high``."""

    low: float | None = None
    high: float | None = None
    above: bool = False

    def __str__(self) -> str:
        if self.high is not None:
            return f"from {self.low:g} to {self.high:g}"
        return f"above {self.low:g}" if self.above else f"at least {self.low:g}"

    def allows(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.above else value < self.low):
            return False
        return self.high is None or value <= self.high


AT_LEAST_1, AT_LEAST_0, ABOVE_0 = Limit(1), Limit(0), Limit(0, above=True)


class _Options:
    """Shared dict/TOML conversion for the option dataclasses; ``choices`` lists the allowed
    values of the options that have a fixed set (checked here, offered by the command line)."""

    section: ClassVar[str]
    choices: ClassVar[dict[str, tuple]] = {}
    limits: ClassVar[dict[str, Limit]] = {}  # the number options' ranges (None: not set)

    def __post_init__(self) -> None:
        for name, allowed in self.choices.items():
            _choice(name, getattr(self, name), allowed)
        for name, limit in self.limits.items():
            _within(name, getattr(self, name), limit)

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
    choices = {
        "layout": LAYOUTS,
        "chunk_encoding": CHUNK_ENCODINGS,
        "numpress_intensity": NUMPRESS_INTENSITY,
        "compression": COMPRESSIONS,
        "centroids": CENTROIDS,
        "parser": PARSERS,
    }
    limits = {
        "compression_level": Limit(1, max(high for _, high in COMPRESSION_LEVELS.values())),
        "chunk_width": ABOVE_0,
        "null_marking_ppm": AT_LEAST_0,
        "data_page_size": AT_LEAST_1,
        "row_group_points": AT_LEAST_1,
        "partition_bytes": AT_LEAST_1,
        "partition_items": AT_LEAST_1,
    }

    layout: str = "point"
    chunk_encoding: str = "delta"
    chunk_width: float = 50.0  # also the chunks a Zarr export gives point archives
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
    # input bytes a partition task parses: each task costs the coordinator and a worker's
    # event loop a few ms of CPU whatever its size (the 100 MB run of bench_scale, 12 against
    # 24 MiB in alternating pairs with its meter: coordinator CPU about 19 % less at 24; see
    # the performance page), and a worker's peak memory grows by about 9 MB per MiB (profile
    # spectra, zlib). The data never change; the row groups end where partitions do
    partition_bytes: int = 24 << 20
    partition_items: int = 1000
    # how mzML and mzMLb are parsed: "lean" (lxml and numpy, records built directly) or
    # "pyteomics" (pyteomics' generic XML walk); both give the same archive
    parser: str = "lean"
    # Thermo .raw: each scan's centroid stream instead of the scan as stored (profile scans
    # of an Orbitrap have one; a scan without one is kept as stored)
    thermo_centroid: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        low, high = COMPRESSION_LEVELS.get(self.compression, (1, 1 << 30))  # no level: any
        if not low <= self.compression_level <= high:
            raise OptionsError(
                f"compression_level {self.compression_level}: {self.compression} takes "
                f"levels {low} to {high}"
            )
        if self.numpress_intensity is not None and self.layout == "point":
            raise OptionsError(
                f"numpress_intensity={self.numpress_intensity!r} needs layout='chunked': the "
                f"point layout stores intensities as they are"
            )

    def content_options(self) -> dict[str, Any]:
        """The options that shape the archive's content (recorded in its data processing);
        how the work was split and where it was written do not, nor a vendor reader's choice
        left at its default (the archives of other inputs stay as they were)."""
        skip = {"partition_bytes", "partition_items", "overwrite", "unpacked", "parser"}
        if not self.thermo_centroid:
            skip.add("thermo_centroid")
        return {k: v for k, v in self.to_dict().items() if k not in skip}

    @property
    def centroids_in_peaks(self) -> bool:
        """Whether centroid-only spectra are written to spectra_peaks (opt-in)."""
        return self.centroids == "peaks"

    @property
    def lossy(self) -> bool:
        return self.chunk_encoding == "numpress" or self.numpress_intensity is not None


@dataclass(frozen=True)
class SlurmOptions(_Options):
    """The ``dask_jobqueue.SLURMCluster`` of ``cluster = "slurm"``: each field is the keyword of
    that name; None (and an empty list) leaves it to dask-jobqueue (its ``jobqueue.yaml``)."""

    section = "slurm"
    limits = {"cores": AT_LEAST_1, "processes": AT_LEAST_1, "job_cpu": AT_LEAST_1}

    queue: str | None = None  # -p
    account: str | None = None  # -A
    walltime: str | None = None  # -t, e.g. "04:00:00"
    cores: int = 1  # --cpus-per-task of each job
    processes: int | None = None  # worker processes per job (default: one per core)
    memory: str = "4GB"  # per job, split between its worker processes
    job_cpu: int | None = None
    job_mem: str | None = None
    interface: str | None = None  # network interface of the workers, e.g. "ib0"
    local_directory: str | None = None  # worker spill space on the node
    log_directory: str | None = None
    python: str | None = None  # the workers' Python (default: this one)
    job_extra_directives: list[str] = field(default_factory=list)  # more #SBATCH lines
    job_directives_skip: list[str] = field(default_factory=list)
    job_script_prologue: list[str] = field(default_factory=list)  # shell lines before workers
    worker_extra_args: list[str] = field(default_factory=list)
    scheduler_options: dict[str, Any] = field(default_factory=dict)

    def keywords(self) -> dict[str, Any]:
        """The SLURMCluster keywords set here (with ``processes`` one per core by default)."""
        given = {k: v for k, v in asdict(self).items() if v is not None and v != [] and v != {}}
        given.setdefault("processes", self.cores)
        return given

    # a read-only mapping of those keywords: ``options.slurm["cores"]``, ``**options.slurm``
    def __getitem__(self, key: str) -> Any:
        return self.keywords()[key]

    def keys(self) -> Iterator[str]:
        return iter(self.keywords())


@dataclass(frozen=True)
class ClusterOptions(_Options):
    """Where the work runs: an embedded LocalCluster, a running scheduler, or SLURM."""

    section = "cluster"
    choices = {"cluster": CLUSTERS}
    limits = {
        "workers": AT_LEAST_1,
        "threads_per_worker": AT_LEAST_1,
        "window": AT_LEAST_1,
        "start_timeout": ABOVE_0,
        "task_timeout": ABOVE_0,
    }

    # "auto": this process for work too small for a LocalCluster to pay for its start, else a
    # LocalCluster (mzpeak_dask.parallel.where); "local" | "slurm" | "inline" (this process)
    cluster: str = "auto"
    workers: int | None = None  # local: worker processes (default: CPU cores); slurm: jobs
    threads_per_worker: int = 1
    memory_limit: str = "auto"
    scheduler: str | None = None  # address of a running scheduler, e.g. tcp://host:8786
    window: int | None = None  # tasks in flight before more are sent (default: 2 a thread + 2)
    dashboard: bool = False  # a cluster started here serves Dask's dashboard (needs bokeh)
    start_timeout: float = 120.0  # seconds for a cluster to start, or a scheduler to answer
    task_timeout: float = 3600.0  # seconds the cluster may go without finishing any task
    slurm: SlurmOptions = field(default_factory=SlurmOptions)  # the [slurm] table

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.slurm, dict):
            object.__setattr__(self, "slurm", SlurmOptions.from_dict(self.slurm))

    def worker_count(self) -> int:
        return self.workers or os.cpu_count() or 1


@dataclass(frozen=True)
class BatchOptions(_Options):
    """How a batch runs."""

    section = "batch"
    limits = {"retries": AT_LEAST_0, "hash_threads": AT_LEAST_1, "hash_timeout": ABOVE_0}

    resume: bool = False  # skip inputs whose valid output was made from the same input
    retries: int = 0  # extra attempts for inputs that failed
    reports: bool = True  # batch_report.html and catalog.parquet beside batch_report.json
    hash_threads: int = 4  # threads hashing inputs when resuming
    # seconds resuming may go without finishing the check of an earlier output (its input
    # hashed, the archive validated) before the batch stops
    hash_timeout: float = 600.0


@dataclass(frozen=True)
class ZarrOptions(_Options):
    """How archives are exported to Zarr (their chunk width is ConvertOptions.chunk_width)."""

    section = "zarr"
    choices = {"compression": ZARR_COMPRESSIONS}
    limits = {"zarr_chunk_points": AT_LEAST_1}

    compression: str = "zstd"  # signal arrays: "zstd" or "none" (about 30% faster)
    overwrite: bool = False  # replace existing run groups
    zarr_chunk_points: int = 1 << 18  # points of a Zarr chunk (about; bigger for big runs)
    single_file: bool = False  # one file per run (RUN.zarr.zip, a ZIP store) instead of a group


@dataclass(frozen=True)
class AnalysisOptions(_Options):
    """Chromatograms across runs (``xic``; ``tic`` and ``base_peak`` share the MS level)."""

    section = "analysis"
    limits = {"ppm": ABOVE_0, "ms_level": AT_LEAST_0, "max_rows": AT_LEAST_0}

    ppm: float = 10.0  # m/z tolerance of an XIC
    ms_level: int = 1  # the spectra the chromatograms read (0: every level)
    max_rows: int = 40  # rows of each run's XIC printed


@dataclass(frozen=True)
class StorageOptions(_Options):
    """Object storage (``s3://``, ``gs://``, ``az://``, ``https://`` URLs): credentials and
    endpoints come from each store's standard environment; ``options`` are the keyword
    arguments of the store's fsspec filesystem (``--storage-options JSON``), e.g.
    ``{"anon": true}`` or ``{"client_kwargs": {"endpoint_url": "http://..."}}``."""

    section = "storage"

    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.options, dict):
            raise OptionsError("storage options must be a JSON object (a TOML table)")


GROUPS: tuple[type[_Options], ...] = (
    ConvertOptions,
    ClusterOptions,
    SlurmOptions,
    BatchOptions,
    ZarrOptions,
    AnalysisOptions,
    StorageOptions,
)


def _choice(name: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        shown = ", ".join("none" if a is None else str(a) for a in allowed)
        raise OptionsError(f"{name} must be one of {shown} (got {value!r})")


def _within(name: str, value: Any, limit: Limit) -> None:
    if value is None:  # not set: the option's own default applies
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise OptionsError(f"{name} must be a number (got {value!r})")
    if not limit.allows(value):
        raise OptionsError(f"{name} must be {limit} (got {value!r})")


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

    ``cli`` holds only the options given on the command line (None means not given). The
    ``[slurm]`` table is the ``slurm`` option of ``[cluster]``.
    """
    section = dict(config.get(cls.section, {}))
    if cls is ClusterOptions and "slurm" in config:
        section["slurm"] = {**section.get("slurm", {}), **config["slurm"]}
    merged = {**section}
    for key, value in cli.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}  # a table: key by key
        elif value is not None:
            merged[key] = value
    return cls.from_dict(merged)
