"""Runs finished on workers, when the workers see the output location.

Each partition's written parts go to a file in the run's staging folder (beside the output, so
on storage every worker sees: the probe checked it) and only its path comes back. A run of one
partition (most files of a batch) is encoded and written in one task. Once every
partition is written, one task on a worker — :func:`finish_run` — stitches the data members
from those files, builds the packed metadata members from the partitions' packed pieces
(precursor references resolved once every id is known), writes ``mzpeak_index.json`` and the
container (a stored ZIP, or a folder), and, when asked (a batch), validates it, hashes its
members and draws its TIC thumbnail, all in one task, so a run costs one round trip less. It
leaves the archive in the staging folder: the coordinator renames it into place, which keeps
the rules of atomic output, Ctrl-C and cleanup in one process (the one holding the staging
folder's lock). So the coordinator schedules, renames and records; it reads no part.

The finishing task writes in a fresh folder inside the staging folder, removed first if a
previous attempt left it (Dask reruns the task elsewhere if its worker dies), and does not
delete the part files, which are removed with the staging folder: a rerun finds them all.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ..archive.parts import write_partition
from ..archive.staging import Folder
from ..archive.writer import ArchiveWriter
from ..contracts import ConversionResult, EncodedPartition, EncodeSpec, Partition, RunPlan
from ..encode import encode_partition
from ..options import ConvertOptions
from ..read.inspection import inspect_output
from ..tables.file_metadata import file_sha256
from . import handoff

FINISH_FOLDER = "finish"


def write_to_file(
    folder: str, part: EncodedPartition, offsets: dict[str, int], spec: EncodeSpec
) -> tuple[str, int]:
    """``part`` written (:func:`~mzpeak_dask.archive.parts.write_partition`) into a file in
    ``folder``; returns its path and the number of items it holds (for progress)."""
    return handoff.dump(write_partition(part, offsets, spec), folder), sum(part.counts.values())


def encode_to_file(folder: str, partition: Partition, spec: EncodeSpec) -> tuple[str, int]:
    """A run's only partition encoded and written into a file in ``folder``, in one task (its
    offsets are zero: nothing comes before it)."""
    return write_to_file(folder, encode_partition(partition, spec), {}, spec)


def finish_run(
    source: str,
    output: str,
    options: ConvertOptions,
    plan: RunPlan,
    staging: str,
    parts: list[str],
    sha256: str | None,
    check: bool,
) -> tuple[ConversionResult, str, dict[str, Any] | None]:
    """The archive of a run from its partitions' files ``parts`` (in order), left in the
    staging folder (``sha256``: the input's, hashed here when None); returns its result, its
    path and, with ``check``, its inspection
    (:func:`~mzpeak_dask.read.inspection.inspect_output`, naming the output)."""
    folder = Folder(Path(staging) / FINISH_FOLDER)
    shutil.rmtree(folder.path, ignore_errors=True)
    folder.path.mkdir()
    writer = ArchiveWriter(Path(source), Path(output), options, plan, folder)
    try:
        for path in parts:
            writer.add(handoff.load(path))
        result = writer.close(sha256 or file_sha256(source))
    except BaseException:
        writer.abort()
        raise
    staged = str(writer.path)
    inspection = _named(inspect_output(staged), staged, output) if check else None
    return result, staged, inspection


def _named(inspection: dict[str, Any], staged: str, output: str) -> dict[str, Any]:
    """``inspection`` with its messages naming the output rather than the staged archive."""
    for key in ("errors", "warnings"):
        if key in inspection:
            inspection[key] = [m.replace(staged, output) for m in inspection[key]]
    return inspection


__all__ = ["FINISH_FOLDER", "encode_to_file", "finish_run", "write_to_file"]
