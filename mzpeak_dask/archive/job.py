"""One run's conversion on the coordinator: its archive opened from the run's plan, fed the
encoded partitions in order, then finished and renamed into place, or aborted leaving nothing.

The coordinator loop (:mod:`mzpeak_dask.parallel.scheduler`) keeps one :class:`RunJob` per run
it is converting; everything the run writes goes through here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..contracts import ConversionResult, EncodedPartition, RunPlan
from ..errors import InputError
from ..options import ConvertOptions
from ..storage.inputs import check_regular_file, remote_input, size_of, survey_ends
from ..storage.readahead import expect_reads, forget
from ..storage.urls import is_url
from ..tables.file_metadata import file_sha256
from .container import Inputs, check_output, put_in_place
from .staging import Staging
from .writer import ArchiveWriter


def read_in_order(plan: RunPlan) -> Any:
    """An input read by ranges whose partitions one process parses, in order (a conversion
    without a cluster, or a small run converted in its plan's task): each partition's bytes
    are fetched while the one before is parsed (:mod:`..storage.readahead`). Returns the
    input's SHA-256 as those reads go (its ``.result()``, which raises if the reads did not
    cover the object in order), taken instead of streaming the object once more; None for a
    local input. :func:`~..storage.readahead.forget` the input once its run has ended."""
    if not is_url(plan.readable):
        return None
    spans = [(p.items.byte_start, p.items.byte_stop) for p in plan.partitions]
    if any(a is None for a, _ in spans):
        return None
    url = plan.readable
    return expect_reads(url, spans, size_of(url), survey_ends(url))


def check_input(source: Path) -> None:
    if remote_input(source):
        return  # read by ranges from storage, where it was found
    check_regular_file(source)  # before anything opens it (a FIFO, a device)
    if not os.access(source, os.R_OK):
        raise InputError(f"{source}: permission denied")


class RunJob:
    """One run's conversion state on the coordinator: planned (usually on a worker), then
    either fed its written partitions in order and finished here (an
    :class:`~.writer.ArchiveWriter`), or finished by a task on a worker
    (``remote``: the coordinator then only renames the finished archive into place)."""

    def __init__(
        self, source: Path, output: Path, options: ConvertOptions, inputs: Inputs | None = None
    ):
        """``inputs``: every input of the call, none of which ``output`` may overwrite."""
        self.source, self.output, self.options = source, output, options
        self.started = time.perf_counter()
        check_input(source)
        self.inputs = inputs or Inputs([source])
        check_output(output, options.overwrite, self.inputs)
        self.staging = Staging(output)
        self.plan: RunPlan | None = None
        self.writer: ArchiveWriter | None = None
        self.sha256: Any = None  # the input's SHA-256 (a future), once started
        self.items_total = self.items_done = 0

    def start(
        self,
        plan: RunPlan,
        background: Callable[..., Any],
        remote: bool = False,
        in_order: bool = False,
    ) -> None:
        """Open the archive for ``plan`` (see :func:`~mzpeak_dask.partition.plan_run`), here
        unless a worker finishes the run (``remote``). ``background(fn, *args)`` runs ``fn``
        beside the conversion and returns a future (the input's SHA-256 is computed so);
        ``in_order``: this process parses the partitions one after another (no cluster), so an
        input in storage is read ahead and hashed as it is read (:func:`read_in_order`)."""
        try:
            self.plan = plan
            # the partitions are parsed in this process, in order (no cluster)
            digest = read_in_order(plan) if in_order and not remote else None
            self.sha256 = digest or self.sha256 or self._hash(plan, background, remote)
            if not remote:
                self.writer = ArchiveWriter(
                    self.source, self.output, self.options, plan, self.staging
                )
        except BaseException:
            self.abort()
            raise
        self.items_total = sum(len(p.items) for p in plan.partitions)

    def _hash(self, plan: RunPlan, background: Callable[..., Any], remote: bool) -> Any:
        """The input's SHA-256, computed beside the conversion. An input in storage streams
        at once, beside the partitions (the stream waits on the network), and the run's last
        task waits for it. A local input of a run a worker finishes is hashed by the
        finishing task, in a thread beside its own work (None here): there a core is free
        while the run's last partitions end elsewhere, and the run costs one task less; as a
        task of its own beside the partitions, the hash made one worker start them late."""
        if is_url(plan.readable):
            return background(file_sha256, plan.readable, first=True)
        if remote:
            return None
        return background(file_sha256, str(self.source))

    @property
    def expected_sequence(self) -> int:
        return self.writer.assembler.expected_sequence

    def add(self, part: EncodedPartition) -> None:
        self.writer.add(part)
        self.items_done = self.writer.items_done

    def finish(self) -> ConversionResult:
        """Finish the archive here and rename it into place."""
        try:
            result = self.writer.close(self._input_sha256)
        except BaseException:
            self.abort()
            raise
        finally:
            self._stop_reading()
        return self.put_in_place(result, self.writer.path)

    def _stop_reading(self) -> None:
        if self.plan is not None and is_url(self.plan.readable):
            forget(self.plan.readable)

    def put_in_place(self, result: ConversionResult, archive: Path) -> ConversionResult:
        """Rename the finished ``archive`` (in the staging folder) to the output."""
        try:
            put_in_place(archive, self.output, self.options.overwrite)
        except BaseException:
            self.abort()
            raise
        self.staging.cleanup()
        return replace(result, seconds=time.perf_counter() - self.started)

    def _input_sha256(self) -> str:
        try:
            return self.sha256.result()
        except Exception:  # noqa: BLE001 - e.g. the worker hashing it died: hash it here
            return file_sha256(self.source)

    def abort(self) -> None:
        """Remove everything this job wrote (nothing is left at OUTPUT)."""
        if self.writer is not None:
            self.writer.abort()
        self._stop_reading()
        self.staging.cleanup()
