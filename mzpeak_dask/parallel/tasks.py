"""The three kinds of task a run is converted by, on a worker or inline in this process:
:func:`plan` (survey, sample the data columns, cut partitions); :func:`write_partition_file`,
one per partition (parse, encode, write its finished Parquet parts into a file in the run's
staging folder, or return them where the workers cannot see it); :func:`finish` (stitch the
parts, write the metadata members and the index, take the input's digest beside it, and in a
batch check the archive, left in the staging folder for the coordinator to rename).

**Offsets.** Rows carry global indices, so a partition is written with the number of items
of each entity before it. The plan gives them (:func:`planned_offsets`), exactly unless the
run has UV spectra (numbered apart from the MS spectra that share their item range): the
finishing task then writes again, with the true offsets, each partition written with wrong
ones (:func:`_corrected`). The archive is the same bytes either way.

**Reruns.** Dask reruns a task whose worker died. Each task writes fresh files; the finishing
task keeps its outcome beside the parts before removing them, for a rerun after that.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import vocabulary as V
from ..archive.container import ARCHIVE_FILE, ARCHIVE_FOLDER
from ..archive.digest import InputDigest
from ..archive.parts import write_partition
from ..archive.staging import Folder
from ..archive.writer import ArchiveWriter
from ..contracts import ConversionResult, EncodedPartition, EncodeSpec, Partition, RunPlan
from ..encode import encode_partition
from ..heap import collection_paused
from ..options import ConvertOptions
from ..partition import plan_run
from ..readers.base import CHROMATOGRAMS, SPECTRA
from ..run_paths import RunPaths
from ..storage.inputs import remote_input
from . import handoff

ENTITY = {SPECTRA: V.SPECTRUM, CHROMATOGRAMS: V.CHROMATOGRAM}  # of a partition's kind of item
FINISH_FOLDER = "finish"
FINISHED = "finished.pkl"  # a finished run's outcome, once its parts are removed

# what a partition's task returns: its file (or, for the coordinator to file, the written
# partition), its counts per entity, and the offsets it was written with
Written = tuple[str | EncodedPartition, dict[str, int], dict[str, int]]


def plan(paths: RunPaths, staging: str, options: ConvertOptions) -> RunPlan:
    return plan_run(paths.source, Path(staging), options, paths.named_source)


def planned_offsets(run: RunPlan) -> list[dict[str, int]]:
    """Each partition's offsets as the plan gives them (see the module's docstring)."""
    before = {SPECTRA: 0, CHROMATOGRAMS: 0}
    out = []
    for partition in run.partitions:
        kind = partition.items.kind
        out.append({ENTITY[kind]: before[kind]})
        before[kind] += len(partition.items)
    return out


def write_partition_file(
    folder: str | None, partition: Partition, spec: EncodeSpec, offsets: dict[str, int]
) -> Written:
    """``partition`` parsed, encoded and written with ``offsets`` into a new file in
    ``folder`` (None: returned as it is, for the coordinator to file), Python's cyclic
    collector paused meanwhile (:mod:`~mzpeak_dask.heap`)."""
    with collection_paused():  # bench_mzxml, bench_mgf: 26-33 % of the CPU (performance page)
        encoded = encode_partition(partition, spec)
        written = write_partition(encoded, offsets, spec)
    kept = written if folder is None else handoff.dump(written, folder)
    return kept, dict(encoded.counts), offsets


@dataclass
class Finished:
    """What :func:`finish` returns: the result, the archive in the staging folder and, in a
    batch, its inspection (validation, member digests, thumbnail)."""

    result: ConversionResult
    archive: str
    inspection: dict[str, Any] | None


def finish(
    paths: RunPaths,
    options: ConvertOptions,
    run: RunPlan,
    staging: str,
    written: list[Written],
    check: str | None,
) -> Finished:
    """The run's archive from its written partitions (in order), left in the staging folder;
    ``check``: the archive is checked too, its problems naming it so (a batch's output)."""
    kept = Path(staging) / FINISHED
    if kept.exists():  # a rerun after an attempt finished (and removed the parts)
        return pickle.loads(kept.read_bytes())
    source = str(paths.source)
    digest = InputDigest(remote_input(source) or source, paths.named_source, run.source_sha256)
    files = _corrected(run, staging, written)
    folder = Folder(Path(staging) / FINISH_FOLDER)
    shutil.rmtree(folder.path, ignore_errors=True)  # what an earlier attempt left
    folder.path.mkdir()
    at = Path(staging) / (ARCHIVE_FOLDER if options.unpacked else ARCHIVE_FILE)
    _remove(at)
    writer = ArchiveWriter(paths.source, paths.output, options, run, folder, at)
    try:
        for path in files:
            writer.add(handoff.load(path))
        result = writer.close(digest.result)
    except BaseException:
        writer.abort()
        _remove(at)  # the parts stay, for a rerun
        raise
    finally:
        shutil.rmtree(folder.path, ignore_errors=True)
    inspection = None
    if check is not None:  # the reader and validator load only when a batch checks its runs
        from ..read.inspection import inspect_output

        inspection = inspect_output(str(at), named=check)
    outcome = Finished(result, str(at), inspection)
    _drop_parts(files, kept, outcome)
    return outcome


def convert_whole(
    paths: RunPaths, options: ConvertOptions, staging: str, check: str | None
) -> Finished:
    """The three steps of a run one after another, in this task."""
    run = plan(paths, staging, options)
    offsets = planned_offsets(run)
    written = [
        write_partition_file(staging, partition, run.spec, offsets[n])
        for n, partition in enumerate(run.partitions)
    ]
    return finish(paths, options, run, staging, written, check)


def convert_each(
    runs: list[tuple[RunPaths, str, str | None]], options: ConvertOptions
) -> list[Finished | Exception]:
    """:func:`convert_whole` for each of ``runs`` (paths, staging folder, check) in turn; a run
    that fails gives its exception in its place, and the others go on."""
    out: list[Finished | Exception] = []
    for paths, staging, check in runs:
        try:
            out.append(convert_whole(paths, options, staging, check))
        except Exception as exc:  # noqa: BLE001 - one run's failure, never the others'
            out.append(exc)
    return out


def _corrected(run: RunPlan, staging: str, written: list[Written]) -> list[str]:
    """The partitions' files, those written with offsets other than the true ones (the
    counts before them) written again with the true ones."""
    files, true = [], {}
    for partition, (path, counts, used) in zip(run.partitions, written, strict=True):
        assert isinstance(path, str)
        if any(used.get(e, 0) != true.get(e, 0) for e in counts):
            path, _, _ = write_partition_file(staging, partition, run.spec, dict(true))
        files.append(path)
        for entity, count in counts.items():
            true[entity] = true.get(entity, 0) + count
    return files


def _remove(at: Path) -> None:
    if at.is_dir():
        shutil.rmtree(at)
    else:
        at.unlink(missing_ok=True)


def _drop_parts(files: list[str], kept: Path, outcome: Finished) -> None:
    """Remove the part files, the outcome first kept beside them for a rerun."""
    new = kept.with_name(kept.name + ".new")
    new.write_bytes(pickle.dumps(outcome, protocol=5))
    os.replace(new, kept)
    for path in files:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


__all__ = [
    "Finished",
    "convert_each",
    "convert_whole",
    "finish",
    "plan",
    "planned_offsets",
    "write_partition_file",
]
