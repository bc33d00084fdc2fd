"""Running a batch: decide what needs converting, convert it on one cluster with failures
isolated per input, validate and record every output as it lands, retry, and report.

Records and messages call each input and archive by their names: their paths, unless the
caller names them otherwise (a batch of URLs, :mod:`.remote`, names the staged inputs by their
URLs and the archives by their keys). Resuming skips an input whose output exists, validates,
and was made from an input with the same SHA-256 as now; everything else is converted again.
Ctrl-C (or any interruption) leaves finished outputs in place, removes partial ones (the
conversion layer does), and records what is left as pending.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..archive.container import Inputs
from ..archive.staging import sweep
from ..convert import convert_many
from ..encode.contracts import ConversionResult, Progress
from ..errors import InputError, OutputError, WorkerDiedError
from ..options import BatchOptions, ClusterOptions, ConvertOptions
from ..parallel.cluster import cluster_client
from ..parallel.where import resolve, work_bytes
from ..read.inspection import inspect_output
from ..read.validate import ERROR, validate
from ..storage.inputs import check_regular_file, remote_input
from ..support.pathtext import text
from ..tables.file_metadata import file_sha256
from . import report
from .bounded import map_within
from .lock import output_lock
from .sources import discover, outputs_for
from .state import CONVERTED, FAILED, PENDING, SKIPPED, BatchState

Names = Callable[[Path, Path], tuple[str, str]]  # (input, archive) -> what records call them


@dataclass
class BatchOutcome:
    records: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False

    def count(self, status: str) -> int:
        return sum(1 for r in self.records if r["status"] == status)

    @property
    def failed(self) -> int:
        return self.count(FAILED) + self.count(PENDING)


def _safe_sha256(path: Path) -> str | None:
    """The input's digest, None when it cannot be read or is no regular file (a FIFO would
    block the batch here, waiting for a writer)."""
    try:
        if remote_input(path) is None:  # an object read where it lies is streamed
            check_regular_file(path)
        return file_sha256(path)
    except (OSError, InputError):
        return None


class BatchRun:
    def __init__(
        self,
        pairs: list[tuple[Path, Path]],
        output_dir: Path,
        options: ConvertOptions,
        cluster: ClusterOptions,
        batch: BatchOptions,
        names: Names | None = None,
    ):
        self.output_dir = output_dir
        self.options = options.updated(overwrite=True)  # outputs of this batch are its own
        self.cluster = cluster
        self.batch = batch
        self.pairs = pairs
        self.names = {s: names(s, o) if names else (str(s), str(o)) for s, o in pairs}
        # the folders of inputs there are (one missing fails alone and leaves no folder)
        present = (o for s, o in pairs if os.path.lexists(s) or remote_input(s) is not None)
        for folder in sorted({o.parent for o in present}):
            folder.mkdir(parents=True, exist_ok=True)
        self.state = BatchState(output_dir)
        self.records: dict[Path, dict[str, Any]] = {}
        self.died: set[Path] = set()  # inputs whose last attempt a dying worker failed

    def remove_stale_staging(self) -> None:
        """Temporary folders that killed conversions left beside the outputs (never those of
        a conversion running now: they are locked by their owner)."""
        sweep(self.output_dir, recursive=True)

    def refuse_overwriting_inputs(self, todo: list[tuple[Path, Path]]) -> list[tuple[Path, Path]]:
        """Fail the inputs whose output is an input of this batch (the same file, a link to
        one, or a folder holding one); the others are still to do."""
        inputs = Inputs(source for source, _ in self.pairs)
        kept = []
        for source, output in todo:
            conflict = inputs.conflict(output)
            if conflict is None:
                kept.append((source, output))
                continue
            named, named_output = self.names[source]
            record = {"input": named, "output": named_output, "status": FAILED}
            record["error"] = f"{named_output}: {conflict}; not overwritten"
            self._store(source, record, attempts=0)
        return kept

    def up_to_date(self) -> list[tuple[Path, Path]]:
        """The inputs a resume must still convert; the others are recorded as skipped."""
        candidates = []
        for source, output in self.pairs:
            previous = self.state.get(self.names[source][0])
            if previous and previous["status"] in (CONVERTED, SKIPPED) and output.exists():
                candidates.append((source, output, previous))
        threads, seconds = self.batch.hash_threads, self.batch.hash_timeout
        hashes = map_within(
            _safe_sha256,
            [c[0] for c in candidates],
            threads,
            seconds,
            lambda source: self.names[source][0],
            "hashing it to resume (the [batch] hash_timeout)",
        )
        same = [h == c[2]["input_sha256"] for c, h in zip(candidates, hashes, strict=True)]
        unchanged = [c for c, ok in zip(candidates, same, strict=True) if ok]
        valid = map_within(
            _valid,
            [c[:2] for c in unchanged],
            threads,
            seconds,
            lambda pair: self.names[pair[0]][1],
            "validating it to resume (the [batch] hash_timeout)",
        )
        kept = [c for c, ok in zip(unchanged, valid, strict=True) if ok]
        skipped = set()
        for source, _, previous in kept:
            self.records[source] = {**previous, "status": SKIPPED}
            skipped.add(source)
        return [(s, o) for s, o in self.pairs if s not in skipped]

    def record(
        self, source: Path, output: Path, outcome: ConversionResult | BaseException, attempts: int
    ) -> None:
        """Record one input's outcome (a converted one with the inspection of its output, made
        by the task that finished it)."""
        if isinstance(outcome, WorkerDiedError):
            self.died.add(source)
        else:
            self.died.discard(source)
        named, named_output = self.names[source]
        if isinstance(outcome, ConversionResult):
            inspection = outcome.inspection or inspect_output(str(output), named=named_output)
            record = self._converted(named, named_output, output, outcome, inspection)
            self._store(source, record, attempts)
            return
        self._store(
            source,
            {
                "input": named,
                "output": named_output,
                "status": FAILED,
                "error": str(outcome).splitlines()[0] if str(outcome) else type(outcome).__name__,
                "input_sha256": _safe_sha256(source),
                "input_bytes": source.stat().st_size if source.exists() else None,
            },
            attempts,
        )

    def convert(
        self,
        jobs: list[tuple[Path, Path]],
        attempt: Callable[[Path], int],
        client: Any,
        progress: Progress | None,
    ) -> None:
        """Convert ``jobs``, recording each outcome as attempt number ``attempt(input)``."""

        def on_result(k: int, result: Any) -> None:
            source, output = jobs[k]
            self.record(source, output, result, attempt(source))

        convert_many(
            jobs,
            self.options,
            names=[self.names[source] for source, _ in jobs],
            cluster=self.cluster,
            client=client,
            progress=progress,
            fail_fast=False,
            on_result=on_result,
            check=True,
        )

    def _store(self, source: Path, record: dict[str, Any], attempts: int) -> None:
        if record.get("error"):  # one line, valid UTF-8 whatever the paths in it
            record["error"] = text(record["error"])
        record["warnings"] = [text(w) for w in record.get("warnings") or []]
        record["attempts"] = attempts
        record["finished_at"] = time.time()
        self.records[source] = record
        self.state.put(record)

    @staticmethod
    def _converted(
        named: str, named_output: str, output: Path, result: ConversionResult, inspection: dict
    ) -> dict:
        base = {
            "input": named,
            "output": named_output,
            "input_sha256": result.input_sha256,
            "input_bytes": result.input_bytes,
            "seconds": result.seconds,
        }
        if inspection["errors"]:
            _remove(output)
            return {
                **base,
                "status": FAILED,
                "error": f"invalid archive: {inspection['errors'][0]}",
            }
        return {
            **base,
            "status": CONVERTED,
            "error": None,
            "output_bytes": result.output_bytes,
            "spectra": result.spectra,
            "chromatograms": result.chromatograms,
            "points": result.points,
            "members": inspection["members"],
            "warnings": inspection["warnings"],
            "tic": inspection["tic"],
            "catalog": inspection.get("catalog"),
        }

    def stopped(self, reason: str) -> None:
        """After the batch stopped early: every input without an outcome of this batch is
        recorded as pending (``reason`` says why), so the report and the state list them all."""
        for source, _ in self.pairs:
            if source not in self.records or self.records[source]["status"] == PENDING:
                named, named_output = self.names[source]
                record = {
                    "input": named,
                    "output": named_output,
                    "status": PENDING,
                    "error": text(reason).splitlines()[0],
                }
                self.records[source] = record
                self.state.put(record)


def _valid(pair: tuple[Path, Path]) -> bool:
    """Whether the archive of ``(input, archive)`` is valid."""
    return not any(p.severity == ERROR for p in validate(pair[1]))


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def run_batch(
    source: str | Path,
    output_dir: str | Path,
    options: ConvertOptions | None = None,
    cluster: ClusterOptions | None = None,
    batch: BatchOptions | None = None,
    *,
    client: Any = None,
    progress: Progress | None = None,
    names: Names | None = None,
) -> BatchOutcome:
    """Convert every input under ``source`` (a folder or a manifest) into ``output_dir``;
    ``names(input, archive)`` gives what the records, messages and progress call them
    (default: their paths). Raises :class:`~mzpeak_dask.errors.OutputBusyError` while another
    batch writes there."""
    started = time.perf_counter()
    output_dir = Path(os.path.abspath(output_dir))
    batch = batch or BatchOptions()
    root, inputs = discover(Path(source))
    pairs = outputs_for(root, inputs, output_dir)
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{output_dir}: cannot create the folder ({exc.strerror})") from None
    with output_lock(output_dir):
        run = BatchRun(
            pairs,
            output_dir,
            options or ConvertOptions(),
            cluster or ClusterOptions(),
            batch,
            names,
        )
        return _run(run, client, progress, started)


def _run(run: BatchRun, client: Any, progress: Progress | None, started: float) -> BatchOutcome:
    batch, output_dir = run.batch, run.output_dir
    run.remove_stale_staging()
    if progress is not None and hasattr(progress, "files"):
        progress.files = len(run.pairs)
    todo = run.up_to_date() if batch.resume else list(run.pairs)
    todo = run.refuse_overwriting_inputs(todo)
    outcome = BatchOutcome()
    if client is None:  # "auto": by the size of what needs converting
        run.cluster = resolve(run.cluster, work_bytes(source for source, _ in todo))
    try:
        with cluster_client(run.cluster, client) as shared:  # one for every attempt
            for attempt in range(1, batch.retries + 2):
                if not todo:
                    break
                jobs = list(todo)
                run.convert(jobs, lambda _, n=attempt: n, shared, progress)
                todo = [(s, o) for s, o in jobs if run.records[s]["status"] == FAILED]
            # A dying worker takes the tasks of other inputs with it: try each input that
            # failed that way once more, alone, so only the one that kills workers fails.
            for pair in [(s, o) for s, o in todo if s in run.died]:
                run.convert([pair], lambda s: run.records[s]["attempts"] + 1, shared, progress)
    except BaseException as exc:
        # Ctrl-C, SIGTERM at a wall-time limit, or a failure of the batch itself (not of one
        # input): finished outputs stay, the others are left pending and listed as such
        outcome.interrupted = isinstance(exc, KeyboardInterrupt)
        why = f"batch stopped: {type(exc).__name__}: {exc}"
        run.stopped("interrupted before it finished" if outcome.interrupted else why)
        # the cluster is gone: no cancelled task can still write into a staging folder
        run.remove_stale_staging()
        raise
    finally:
        outcome.records = [run.records[s] for s, _ in run.pairs if s in run.records]
        outcome.seconds = time.perf_counter() - started
        report.write_json(output_dir, outcome.records, outcome.seconds, outcome.interrupted)
        if batch.reports:
            report.write_html(output_dir, outcome.records, outcome.seconds)
            report.write_catalog(output_dir, run.state.all())
        run.state.close()
    return outcome


__all__ = ["BatchOutcome", "run_batch"]
