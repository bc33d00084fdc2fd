"""Runs finished on workers, when the workers see the output location.

Each partition is encoded and written by one task (:func:`encode_to_file`, with the offsets
its run's plan gives: see :mod:`.offsets`); its parts go to a file in the run's staging folder
(beside the output, so on storage every worker sees: the probe checked it) and only its path
and counts come back. Once every partition is written, the archive is written in two halves at
once, by two tasks on two workers when there are two: :func:`stitch_signal` stitches the
spectrum data member (and the peaks member) from those files into the container, and
:func:`build_metadata`, on the worker holding the input's digest (begun by the plan's task
there, :mod:`.early_hash`), builds the packed metadata members from the partitions' packed
pieces (precursor references resolved once every id is known) and the UV spectra's and
chromatograms' data members, as files. A third task, :func:`finish_written`, adds those after
the spectrum signal, writes ``mzpeak_index.json`` and, when asked (a batch), validates the
archive, hashes its members and draws its TIC thumbnail; the bytes are those one task writes
(:func:`finish_run`, which finishes a run the coordinator followed partition by partition).
The archive is left in the staging folder: the coordinator renames it into place, which
keeps the rules of atomic output, Ctrl-C and cleanup in one process (the one holding the
staging folder's lock). So the coordinator schedules, renames and records; it reads no part.

A small run — at most one partition of spectra and one of chromatograms, as most files of a
repository — costs the cluster one task: :func:`plan_or_finish` plans it and, finding it
small, encodes and writes its partitions in order and finishes it in the same task, on the
same worker, returning what :func:`finish_run` returns (:class:`FinishedRun`). Its archive is
the one the fanned-out tasks write, byte for byte. A larger run gets its plan back and fans
out; its chromatograms, when they are one small partition (a TIC and a base peak trace,
:func:`written_with_plan`), are encoded and written by the plan's task, which has read the
end of the input, where an indexed mzML keeps them, so they cost no task of their own.
Several consecutive small files of a batch can share one task (:func:`convert_each`),
each converted whole there (:func:`convert_whole`), however many partitions its spectra make,
and each one's outcome returned in its place.

Each of these tasks writes its files in a fresh folder inside the staging folder, removed
first if a previous attempt left it (Dask reruns a task elsewhere if its worker dies), and the
archive in the staging folder itself, where the coordinator renames it from (it then finds
only its lock there, and the parts of a larger run, and removes the folder without walking
it). The task closing an archive written in halves starts again from the end of the spectrum
signal members, and copies the other half's files rather than moving them, so a second
attempt finds them. Once the archive is complete, the last task removes the part files it
read, having first kept its outcome beside them: a rerun (its worker lost before the
coordinator had the result) returns that outcome; a rerun before then finds every part.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..archive.container import ARCHIVE_FILE, ARCHIVE_FOLDER
from ..archive.job import read_in_order
from ..archive.parts import next_offsets, write_partition
from ..archive.staging import Folder
from ..archive.writer import (
    ArchiveWriter,
    MetadataWriter,
    MetadataWritten,
    SignalWriter,
    SignalWritten,
    close_archive,
)
from ..contracts import ConversionResult, EncodedPartition, EncodeSpec, Partition, RunPlan
from ..encode import encode_partition
from ..options import ConvertOptions
from ..partition import plan_run
from ..readers.base import CHROMATOGRAMS
from ..storage.readahead import forget
from ..storage.urls import is_url
from ..tables.file_metadata import file_sha256
from . import early_hash, handoff
from .executors import beside
from .offsets import Offsets

FINISH_FOLDER = "finish"
FINISHED = "finished.pkl"  # a finished run's outcome, once its parts are removed


def write_to_file(
    folder: str, part: EncodedPartition, offsets: dict[str, int], spec: EncodeSpec
) -> tuple[str, int]:
    """``part`` written (:func:`~mzpeak_dask.archive.parts.write_partition`) into a file in
    ``folder``; returns its path and the number of items it holds (for progress)."""
    return handoff.dump(write_partition(part, offsets, spec), folder), sum(part.counts.values())


def encode_to_file(
    folder: str, partition: Partition, spec: EncodeSpec, offsets: dict[str, int]
) -> tuple[str, int, dict[str, int]]:
    """``partition`` encoded and written (:func:`write_to_file`) with ``offsets`` in one task
    (see :mod:`.offsets`); returns the file's path, the number of items and their counts per
    entity (to check the offsets)."""
    encoded = encode_partition(partition, spec)
    path, items = write_to_file(folder, encoded, offsets, spec)
    return path, items, dict(encoded.counts)


@dataclass
class FinishedRun:
    """A small run planned, converted and finished by one task (:func:`plan_or_finish`):
    what :func:`finish_run` returns, and the number of items (for progress)."""

    result: ConversionResult
    archive: str
    inspection: dict[str, Any] | None
    items: int


@dataclass
class PlannedRun:
    """A larger run's plan (it fans out), and the partitions its plan's task wrote already:
    partition -> what :func:`encode_to_file` returns, and the offsets it was written with."""

    plan: RunPlan
    written: dict[int, tuple[str, int, dict[str, int], dict[str, int]]]
    hashing_on: str | None = None  # the worker hashing the input (:mod:`.early_hash`)


FOLDED_SHARE = 8  # chromatograms up to this share of a partition's bytes go with the plan


def with_plan(plan: RunPlan, partition_bytes: int) -> list[int]:
    """The partitions a larger run's plan task writes too: its chromatograms, when they are
    one partition of at most 1/``FOLDED_SHARE`` of ``partition_bytes`` (a run's TIC and base
    peak traces, or a few more), so that they delay the fan-out by little."""
    found = [n for n, p in enumerate(plan.partitions) if p.items.kind == CHROMATOGRAMS]
    if len(found) != 1:
        return []
    items = plan.partitions[found[0]].items
    if items.byte_start is None or items.byte_stop is None:
        return []
    return found if items.byte_stop - items.byte_start <= partition_bytes // FOLDED_SHARE else []


def written_with_plan(
    plan: RunPlan, staging: str, partition_bytes: int
) -> dict[int, tuple[str, int, dict[str, int], dict[str, int]]]:
    """The partitions of :func:`with_plan` encoded and written (:func:`encode_to_file`) with
    the offsets the plan gives them (:meth:`~.offsets.Offsets.guess`), as their own tasks
    would; the coordinator checks those offsets as it checks any partition's."""
    offsets = Offsets(plan)
    written = {}
    for n in with_plan(plan, partition_bytes):
        used = offsets.guess(n)
        written[n] = (*encode_to_file(staging, plan.partitions[n], plan.spec, used), used)
    return written


def small(plan: RunPlan) -> bool:
    """Whether a run is converted in its plan's task: no kind of item has more than one
    partition, so there is nothing within the run to spread over workers."""
    kinds = [p.items.kind for p in plan.partitions]
    return len(kinds) == len(set(kinds))


def plan_or_finish(
    source: str, output: str, options: ConvertOptions, staging: str, check: bool
) -> PlannedRun | FinishedRun:
    """The plan of the run (:func:`~mzpeak_dask.partition.plan_run`) with the partitions
    written beside it (:func:`written_with_plan`), or, for a :func:`small` run, the run
    converted and finished here (:func:`_converted`)."""
    hashing_on = None
    if _fans_out(source, options):  # a local input: hashed here, at the lowest priority, from
        early_hash.begin(source, staging)  # now (the other workers wait for the plan)
        hashing_on = early_hash.worker_address()
    plan = plan_run(Path(source), Path(staging), options, reads="here if small")
    if small(plan):  # its digest (if begun) is taken by finish_run
        return _converted(source, output, options, plan, staging, check)
    written = written_with_plan(plan, staging, options.partition_bytes)
    return PlannedRun(plan, written, hashing_on)


def _fans_out(source: str, options: ConvertOptions) -> bool:
    """Whether ``source`` is a local file larger than a partition (a run that fans out)."""
    if is_url(source):
        return False
    try:
        return os.path.getsize(source) > options.partition_bytes
    except OSError:  # planning names the problem
        return False


def convert_whole(
    source: str, output: str, options: ConvertOptions, staging: str, check: bool
) -> FinishedRun:
    """The run planned, converted and finished here, however many partitions it has."""
    plan = plan_run(Path(source), Path(staging), options, reads="here")
    return _converted(source, output, options, plan, staging, check)


def _converted(
    source: str, output: str, options: ConvertOptions, plan: RunPlan, staging: str, check: bool
) -> FinishedRun:
    """The planned run converted here, its partitions encoded and written in order (each
    one's offsets follow from the counts of those before it), and finished
    (:func:`finish_run`)."""
    digest = read_in_order(plan)  # an input in storage: its digest taken as it is read
    try:
        offsets: dict[str, int] = {}
        parts = []
        for partition in plan.partitions:
            encoded = encode_partition(partition, plan.spec)
            parts.append(write_partition(encoded, offsets, plan.spec, pack=False))
            offsets = next_offsets(offsets, encoded)
        sha256 = _result_or_none(digest)
    finally:
        if digest is not None:
            forget(plan.readable)
    finished = finish_run(source, output, options, plan, staging, parts, sha256, check)
    return FinishedRun(*finished, items=sum(len(p.items) for p in plan.partitions))


def convert_each(
    runs: list[tuple[str, str, str]], options: ConvertOptions, check: bool
) -> list[FinishedRun | Exception]:
    """:func:`convert_whole` for each of ``runs`` (source, output, staging folder) in turn, in
    one task (a batch of small files: the cluster's cost per task is shared), however many
    partitions each has: other runs keep the cluster's workers busy (a task holds several
    only while they do, see :mod:`.packs`), and a run of a few partitions would otherwise
    cost a task for each and one to finish it. A run that fails gives its exception, in its
    place, and the others go on."""
    out: list[FinishedRun | Exception] = []
    for source, output, staging in runs:
        try:
            out.append(convert_whole(source, output, options, staging, check))
        except Exception as exc:  # noqa: BLE001 - one run's failure, never the others'
            out.append(exc)
    return out


def _result_or_none(digest: Any) -> str | None:
    """The digest taken as the input was read; None (hash it anew) if it could not be."""
    if digest is None:
        return None
    try:
        return digest.result()
    except Exception:  # noqa: BLE001 - e.g. spans not covering the object in order
        return None


def finish_run(
    source: str,
    output: str,
    options: ConvertOptions,
    plan: RunPlan,
    staging: str,
    parts: list[str | EncodedPartition],
    sha256: str | None,
    check: bool,
) -> tuple[ConversionResult, str, dict[str, Any] | None]:
    """The archive of a run from its written partitions ``parts`` (in order: the files
    :func:`write_to_file` wrote, or the partitions themselves), left in the staging folder
    (``sha256``: the input's; when None, the hash the plan's task began on this worker, else
    one begun here in a thread beside the stitching, awaited only once the spectrum data
    members are written); returns its result, its path
    and, with ``check``, its inspection (:func:`~mzpeak_dask.read.inspection.inspect_output`,
    naming the output)."""
    files = [p for p in parts if isinstance(p, str)]
    finished = Path(staging) / FINISHED
    if files and finished.exists():  # a rerun: an attempt finished, and removed parts
        return pickle.loads(finished.read_bytes())
    folder = _fresh(staging, FINISH_FOLDER)
    at = _cleared(_archive_at(staging, options))
    digest = _digest(source, staging, sha256)
    writer = ArchiveWriter(Path(source), Path(output), options, plan, folder, at)
    try:
        result = _fed(writer, parts, lambda: writer.close(digest))
    except BaseException:
        _cleared(at)  # the parts stay, for a rerun
        raise
    finally:
        shutil.rmtree(folder.path, ignore_errors=True)
    return _concluded(result, at, output, check, files, finished)


@dataclass
class Rewrite:
    """What :func:`finish_written` returns, finishing nothing, when partitions were written
    with a wrong guess: what each partition's task returned, in order, for the coordinator to
    write those partitions again with the true offsets, side by side, and finish the run as it
    finishes one it checked (:mod:`.scheduler`)."""

    written: list[tuple[str, int, dict[str, int]]]


SIGNAL_FOLDER = "signal"  # where stitch_signal stages the peaks member
METADATA_FOLDER = "metadata"  # where build_metadata writes its members


def _rewrite(
    plan: RunPlan, written: list[tuple[str, int, dict[str, int]]], used: list[dict[str, int]]
) -> Rewrite | None:
    """A :class:`Rewrite` when the partitions' counts show one was written with offsets that
    are not the true ones (:meth:`~.offsets.Offsets.arrived`), else None."""
    offsets = Offsets(plan)
    for n, guessed in enumerate(used):
        offsets.written_with(n, guessed)
    if any(offsets.arrived(n, counts) for n, (_, _, counts) in enumerate(written)):
        return Rewrite(list(written))
    return None


def _fresh(staging: str, name: str) -> Folder:
    """A new folder ``name`` in the staging folder, emptied if an earlier attempt left it."""
    folder = Folder(Path(staging) / name)
    shutil.rmtree(folder.path, ignore_errors=True)
    folder.path.mkdir()
    return folder


def stitch_signal(
    output: str,
    options: ConvertOptions,
    plan: RunPlan,
    staging: str,
    written: list[tuple[str, int, dict[str, int]]],
    used: list[dict[str, int]],
) -> SignalWritten | Rewrite | None:
    """The run's archive begun in its staging folder with its spectrum signal members
    (:class:`~mzpeak_dask.archive.writer.SignalWriter`), from the partitions' files, while
    :func:`build_metadata` writes the rest on another worker; :func:`finish_written` closes
    it (see :func:`_half`)."""

    def write() -> SignalWritten:
        folder = _fresh(staging, SIGNAL_FOLDER)
        at = _cleared(_archive_at(staging, options))
        try:
            writer = SignalWriter(Path(output), options, plan, folder, at)
            return _fed(writer, _paths(written), writer.close)
        finally:
            shutil.rmtree(folder.path, ignore_errors=True)

    return _half(plan, staging, written, used, write)


def build_metadata(
    source: str,
    options: ConvertOptions,
    plan: RunPlan,
    staging: str,
    written: list[tuple[str, int, dict[str, int]]],
    used: list[dict[str, int]],
    sha256: str | None,
) -> MetadataWritten | Rewrite | None:
    """The run's members but its spectrum signal, as files in the staging folder
    (:class:`~mzpeak_dask.archive.writer.MetadataWriter`), from the partitions' files, while
    :func:`stitch_signal` writes the signal on another worker (see :func:`_half`).
    ``sha256``: the input's; when None, the hash the plan's task began on this worker, else
    one begun here in a thread beside this work."""

    def write() -> MetadataWritten:
        folder = _fresh(staging, METADATA_FOLDER)
        digest = _digest(source, staging, sha256)
        writer = MetadataWriter(Path(source), options, plan, folder)
        try:
            return _fed(writer, _paths(written), lambda: writer.close(digest))
        except BaseException:
            shutil.rmtree(folder.path, ignore_errors=True)
            raise

    return _half(plan, staging, written, used, write)


def _half(
    plan: RunPlan,
    staging: str,
    written: list[tuple[str, int, dict[str, int]]],
    used: list[dict[str, int]],
    write: Callable[[], Any],
) -> Any:
    """What ``write()`` returns, one half of the run's archive written, unless the run is
    finished already (a rerun: None) or a partition was written with a wrong guess (its
    :class:`Rewrite`)."""
    if (Path(staging) / FINISHED).exists():
        return None
    return _rewrite(plan, written, used) or write()


def _fed(writer: Any, parts: list[str | EncodedPartition], close: Callable[[], Any]) -> Any:
    """``writer`` fed each partition in order (a file :func:`write_to_file` wrote, or the
    partition itself), then ``close()``\\ d; aborted if either fails."""
    try:
        for part in parts:
            writer.add(handoff.load(part) if isinstance(part, str) else part)
        return close()
    except BaseException:
        writer.abort()
        raise


def _paths(written: list[tuple[str, int, dict[str, int]]]) -> list[str]:
    """The part files of what the partitions' tasks returned (:func:`encode_to_file`)."""
    return [path for path, _, _ in written]


def _digest(source: str, staging: str, sha256: str | None) -> Callable[[], str]:
    """The input's digest, when asked for: ``sha256`` if given, else the hash the plan's task
    began on this worker, else one begun now in a thread beside the caller's work."""
    if sha256:
        return lambda: sha256
    return (early_hash.take(source, staging) or beside(file_sha256, source)).result


def _archive_at(staging: str, options: ConvertOptions) -> Path:
    """Where a run's archive is written in its staging folder, on a worker."""
    return Path(staging) / (ARCHIVE_FOLDER if options.unpacked else ARCHIVE_FILE)


def _cleared(at: Path) -> Path:
    """``at`` with whatever an earlier attempt left there removed."""
    if at.is_dir():
        shutil.rmtree(at)
    else:
        at.unlink(missing_ok=True)
    return at


def finish_written(
    source: str,
    output: str,
    options: ConvertOptions,
    plan: RunPlan,
    staging: str,
    written: list[tuple[str, int, dict[str, int]]],
    check: bool,
    signal: SignalWritten | Rewrite | None,
    metadata: MetadataWritten | Rewrite | None,
) -> tuple[ConversionResult, str, dict[str, Any] | None] | Rewrite:
    """The run finished, its partitions submitted all at once, each written with the offsets
    its plan gave, then its archive in two halves at once (on two workers when there are
    two), ``signal`` (:func:`stitch_signal`) and ``metadata`` (:func:`build_metadata`), and
    this task after them: ``written`` holds what each partition's :func:`encode_to_file`
    returned, passed from worker to worker. This task adds the second half's members after
    the first's and writes the index; returns what :func:`finish_run` returns.

    The halves check the partitions' offsets from their counts, as the coordinator checks
    them for a run it follows partition by partition (:meth:`~.offsets.Offsets.arrived`). A
    partition written with a wrong guess (UV spectra its plan's sample missed, interleaved
    with MS spectra: then most partitions after the first of them are wrong) makes them a
    :class:`Rewrite`, which this task returns: those partitions are then written again in
    parallel rather than one after another here."""
    finished = Path(staging) / FINISHED
    if finished.exists():  # a rerun: an attempt finished, and removed parts
        return pickle.loads(finished.read_bytes())
    for half in (signal, metadata):
        if isinstance(half, Rewrite):
            return half
    at = _archive_at(staging, options)
    result = close_archive(Path(source), Path(output), options, plan, at, signal, metadata)
    outcome = _concluded(result, at, output, check, _paths(written), finished)
    shutil.rmtree(metadata.folder, ignore_errors=True)  # kept until now, for a rerun
    return outcome


def _concluded(
    result: ConversionResult, at: Path, output: str, check: bool, files: list[str], finished: Path
) -> tuple[ConversionResult, str, dict[str, Any] | None]:
    """A finished run's outcome: its result, its archive ``at`` in the staging folder and,
    with ``check``, the archive's inspection (naming the output); kept beside its part
    ``files``, which are removed (:func:`_drop_parts`)."""
    staged = str(at)
    inspection = None
    if check:  # the reader and validator load only when a batch checks its runs
        from ..read.inspection import inspect_output

        inspection = _named(inspect_output(staged), staged, output)
    if files:
        _drop_parts(files, finished, (result, staged, inspection))
    return result, staged, inspection


def _drop_parts(files: list[str], finished: Path, outcome: tuple) -> None:
    """Remove the part files the archive was stitched from, here on the worker, rather than
    leave them to the coordinator, which removes the staging folder: unlinking a run's parts
    was most of its CPU per partition. The outcome is kept first beside them, so a rerun of
    the task (its worker lost before the coordinator had its result) returns it."""
    written = finished.with_name(finished.name + ".new")
    written.write_bytes(pickle.dumps(outcome, protocol=5))
    os.replace(written, finished)
    for path in files:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _named(inspection: dict[str, Any], staged: str, output: str) -> dict[str, Any]:
    """``inspection`` with its messages naming the output rather than the staged archive."""
    for key in ("errors", "warnings"):
        if key in inspection:
            inspection[key] = [m.replace(staged, output) for m in inspection[key]]
    return inspection


__all__ = [
    "FINISH_FOLDER",
    "FinishedRun",
    "PlannedRun",
    "Rewrite",
    "convert_each",
    "convert_whole",
    "encode_to_file",
    "finish_run",
    "build_metadata",
    "finish_written",
    "plan_or_finish",
    "small",
    "stitch_signal",
    "write_to_file",
]
