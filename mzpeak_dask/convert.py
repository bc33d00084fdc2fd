"""Converting runs: plan on the coordinator, encode partitions on workers, assemble in order.

:func:`convert` converts one run; :func:`convert_many` converts several side by side on one
cluster (parallel across files and within each file). Both run on Dask by default — an embedded
LocalCluster, a running scheduler, a SLURM cluster, or a ``distributed.Client`` you pass in —
and ``ClusterOptions(cluster="inline")`` runs everything in this process without Dask.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import vocabulary as V
from .archive.assembler import RunAssembler
from .archive.container import Container, Inputs, check_output
from .archive.staging import Staging, folder_for, sweep
from .encode import EncodedPartition
from .errors import InputError, MzPeakDaskError
from .options import ClusterOptions, ConvertOptions
from .partition import RunPlan
from .readers.identifiers import DuplicateIds
from .tables.file_metadata import file_sha256, footer_metadata

Progress = Callable[[str, int, int], None]  # (input, items done, items total)


@dataclass
class ConversionResult:
    """What one conversion produced."""

    input: str
    output: str
    format: str
    spectra: int
    chromatograms: int
    wavelength_spectra: int
    points: int  # data points of the spectra (with centroids kept in spectra_peaks)
    chromatogram_points: int
    input_bytes: int
    output_bytes: int
    seconds: float
    input_sha256: str
    members: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # one line each (e.g. repeated ids)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_input(source: Path) -> None:
    if not source.exists():
        raise InputError(f"{source}: no such file")
    if source.is_dir():
        raise InputError(f"{source}: is a directory, not an MS data file")
    if not os.access(source, os.R_OK):
        raise InputError(f"{source}: permission denied")


class RunJob:
    """One run's conversion state on the coordinator: planned (usually on a worker), then fed
    its encoded partitions in order, then finished into the archive."""

    def __init__(
        self, source: Path, output: Path, options: ConvertOptions, inputs: Inputs | None = None
    ):
        """``inputs``: every input of the call, none of which ``output`` may overwrite."""
        self.source, self.output, self.options = source, output, options
        self.started = time.perf_counter()
        check_input(source)
        check_output(output, options.overwrite, inputs or Inputs([source]))
        sweep(folder_for(output), output)  # what conversions that died left for this output
        self.staging = Staging(output)
        self.plan: RunPlan | None = None
        self.container: Container | None = None
        self.assembler: RunAssembler | None = None
        self.items_total = self.items_done = 0
        self.ids = DuplicateIds()

    def start(self, plan: RunPlan, background: Callable[..., Any]) -> None:
        """Open the archive for ``plan`` (see :func:`~mzpeak_dask.partition.plan_run`).
        ``background(fn, *args)`` runs ``fn`` beside the conversion and returns a future."""
        try:
            self.plan = plan
            self.sha256 = background(file_sha256, str(self.source))
            self.container = Container(self.output, self.staging, self.options.unpacked)
            self.assembler = RunAssembler(plan.spec, self.container, self.staging)
        except BaseException:
            self.abort()
            raise
        self.items_total = sum(len(p.items) for p in plan.partitions)

    def add(self, part: EncodedPartition) -> None:
        self.assembler.add(part)
        self.ids.feed_partition(part)
        self.items_done += sum(part.counts.values())

    def finish(self) -> ConversionResult:
        try:
            sha256 = self._input_sha256()
            footer = footer_metadata(
                self.plan.survey.run_metadata,
                source=self.source,
                file_format=self.plan.format.file_format,
                native_id_format=self.plan.format.native_id_format,
                sha256=sha256,
                options=self.options.content_options(),
            )
            counts = self.assembler.finish(footer)
            members = dict(self.container.members)
            self.container.commit(self.options.overwrite)
        except BaseException:
            self.abort()
            raise
        self.staging.cleanup()
        return ConversionResult(
            input=str(self.source),
            output=str(self.output),
            format=self.plan.format.name,
            spectra=counts.get(V.SPECTRUM, {}).get("count", 0),
            chromatograms=counts.get(V.CHROMATOGRAM, {}).get("count", 0),
            wavelength_spectra=counts.get(V.WAVELENGTH_SPECTRUM, {}).get("count", 0),
            points=sum(
                counts.get(e, {}).get("points", 0) for e in (V.SPECTRUM, V.WAVELENGTH_SPECTRUM)
            ),
            chromatogram_points=counts.get(V.CHROMATOGRAM, {}).get("points", 0),
            input_bytes=self.source.stat().st_size,
            output_bytes=_size(self.output),
            seconds=time.perf_counter() - self.started,
            input_sha256=sha256,
            members=members,
            warnings=[w for w in [self.ids.warning(self.source)] if w],
        )

    def _input_sha256(self) -> str:
        try:
            return self.sha256.result()
        except Exception:  # noqa: BLE001 - e.g. the worker hashing it died: hash it here
            return file_sha256(self.source)

    def abort(self) -> None:
        """Remove everything this job wrote (nothing is left at OUTPUT)."""
        if self.assembler is not None:
            self.assembler.abort()
        if self.container is not None:
            self.container.abort()
        self.staging.cleanup()


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".bz2"):
        name = name.removesuffix(suffix)
    return Path(name).stem


def archive_names(inputs: list[Path]) -> list[str]:
    """``<name>.mzpeak`` for each input; inputs of the same folder that would share a name
    (``run.mzML`` beside ``run.mgf``) keep their whole file name (``run.mgf.mzpeak``)."""
    keys = [(p.parent, _stem(p)) for p in inputs]
    return [
        f"{p.name if keys.count(k) > 1 else k[1]}.mzpeak" for p, k in zip(inputs, keys, strict=True)
    ]


def is_archive_folder(path: Path) -> bool:
    """An existing folder that is an unpacked archive (named ``*.mzpeak`` or holding an
    ``mzpeak_index.json``): an output to replace, not a folder to write archives into."""
    return path.is_dir() and (path.suffix.lower() == ".mzpeak" or (path / V.INDEX_MEMBER).is_file())


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir())
    return path.stat().st_size


def convert(
    input: str | os.PathLike,
    output: str | os.PathLike,
    options: ConvertOptions | None = None,
    *,
    cluster: ClusterOptions | None = None,
    client: Any = None,
    progress: Progress | None = None,
) -> ConversionResult:
    """Convert one MS run into an mzPeak archive (see :func:`convert_many`)."""
    results = convert_many(
        [(input, output)], options, cluster=cluster, client=client, progress=progress
    )
    outcome = results[0]
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def convert_many(
    jobs: list[tuple[str | os.PathLike, str | os.PathLike]],
    options: ConvertOptions | None = None,
    *,
    cluster: ClusterOptions | None = None,
    client: Any = None,
    progress: Progress | None = None,
    fail_fast: bool = True,
    on_result: Callable[[int, ConversionResult | MzPeakDaskError], None] | None = None,
) -> list[ConversionResult | MzPeakDaskError]:
    """Convert several runs side by side on one cluster.

    Returns one entry per job, in order: the result, or (with ``fail_fast=False``) the error
    that stopped that job — one bad input then does not stop the others. ``on_result(k,
    outcome)`` is called as each job ends.
    """
    from .parallel.scheduler import run_jobs

    options = options or ConvertOptions()
    cluster = cluster or ClusterOptions()
    return run_jobs(
        [(Path(i), Path(o)) for i, o in jobs],
        options,
        cluster,
        client,
        progress,
        fail_fast,
        on_result,
    )
