"""One run's conversion on the coordinator: its archive opened from the run's plan, fed the
encoded partitions in order, then finished and renamed into place, or aborted leaving nothing.

The coordinator loop (:mod:`mzpeak_dask.parallel.scheduler`) keeps one :class:`RunJob` per run
it is converting; everything the run writes goes through here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import vocabulary as V
from ..contracts import ConversionResult, EncodedPartition, RunPlan
from ..errors import InputError
from ..options import ConvertOptions
from ..readers.identifiers import DuplicateIds
from ..tables.file_metadata import file_sha256, footer_metadata
from .assembler import RunAssembler
from .container import Container, Inputs, check_output
from .staging import Staging, folder_for, sweep


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


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir())
    return path.stat().st_size
