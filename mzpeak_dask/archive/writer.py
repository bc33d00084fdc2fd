"""Writing one run's archive from its written partitions: the data members stitched from the
parts, the packed metadata members, ``mzpeak_index.json`` and the container, in a folder.

The same writer runs on the coordinator (when the workers cannot see the output location and
the partitions come back as bytes) and on a worker, as the task that finishes a run (when they
can: see :mod:`mzpeak_dask.parallel.finish`). Either way it copies the signal parts and
decodes or compresses no signal page; the archive it leaves in its folder is complete, and
:func:`~mzpeak_dask.archive.container.put_in_place` renames it to the output.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import vocabulary as V
from ..contracts import ConversionResult, EncodedPartition, RunPlan
from ..options import ConvertOptions
from ..readers.identifiers import DuplicateIds
from ..storage.inputs import input_size
from ..tables.file_metadata import footer_metadata
from .assembler import (
    MetadataAssembler,
    RunAssembler,
    Sequence,
    SignalAssembler,
    add_rest,
    counts_of,
    footer_key_value,
)
from .container import Begun, Container, archive_size
from .staging import Folder


class ArchiveWriter:
    """Fed a run's written partitions in order, then :meth:`close`\\ d into a finished,
    not yet renamed, archive in ``folder`` (at ``at``, when given; its scratch files stay in
    ``folder``)."""

    def __init__(
        self,
        source: Path,
        output: Path,
        options: ConvertOptions,
        plan: RunPlan,
        folder: Folder,
        at: Path | None = None,
    ):
        self.source, self.output, self.options, self.plan = source, output, options, plan
        self.container = Container(output, folder, options.unpacked, at=at)
        self.assembler = RunAssembler(plan.spec, self.container, folder)
        self.ids = DuplicateIds()
        self.items_done = 0

    def add(self, part: EncodedPartition) -> None:
        self.assembler.add(part)
        self.ids.feed_partition(part)
        self.items_done += sum(part.counts.values())

    def close(self, sha256: Callable[[], str]) -> ConversionResult:
        """Write the remaining members and close the container (the result's ``seconds`` is
        left to the caller, who knows when the run started). ``sha256()`` gives the input's
        digest; it is called once, when the first member that records it is written (after
        the spectrum data members), so a digest still being computed beside this has until
        then."""
        digest = functools.cache(sha256)
        counts = self.assembler.finish(
            lambda: _footer(self.source, self.options, self.plan, digest())
        )
        self.container.close()
        return _result(
            self.source,
            self.output,
            self.plan,
            counts,
            digest(),
            self.container.members,
            self.ids.warning(self.source),
            self.path,
        )

    @property
    def path(self) -> Path:
        """The finished archive, before it is renamed into place."""
        return self.container.path

    def abort(self) -> None:
        self.assembler.abort()
        self.container.abort()


# A run's archive written by two processes at once, then closed by a third (the tasks of
# :mod:`mzpeak_dask.parallel.finish`): the spectrum signal (:class:`SignalWriter`) and the
# rest (:class:`MetadataWriter`), each from the same written partitions, then the members the
# second staged added after the first's (:func:`close_archive`). The bytes are those
# :class:`ArchiveWriter` writes.


@dataclass
class SignalWritten:
    """What :class:`SignalWriter` leaves for :func:`close_archive`."""

    begun: Begun
    centroid_points: int


@dataclass
class MetadataWritten:
    """What :class:`MetadataWriter` leaves for :func:`close_archive`: its members' names in
    archive order (files in ``folder``), the file-level metadata, the input's digest, the
    counts and the duplicate-id warning."""

    folder: str
    names: list[str]
    footer: dict[str, Any]
    sha256: str
    sequence: Sequence
    warning: str | None


class SignalWriter:
    """The archive begun with its spectrum signal members (the archive at ``at``)."""

    def __init__(
        self, output: Path, options: ConvertOptions, plan: RunPlan, folder: Folder, at: Path
    ):
        self.container = Container(output, folder, options.unpacked, at=at, followed=False)
        self.assembler = SignalAssembler(plan.spec, self.container, folder)

    def add(self, part: EncodedPartition) -> None:
        self.assembler.add(part)

    def close(self) -> SignalWritten:
        self.assembler.finish()
        return SignalWritten(self.container.suspend(), self.assembler.centroid_points)

    def abort(self) -> None:
        self.assembler.abort()
        self.container.abort()


class MetadataWriter:
    """The members of a run but its spectrum signal, as files in ``folder``."""

    def __init__(self, source: Path, options: ConvertOptions, plan: RunPlan, folder: Folder):
        self.source, self.options, self.plan, self.folder = source, options, plan, folder
        self.assembler = MetadataAssembler(plan.spec, folder)
        self.ids = DuplicateIds()

    def add(self, part: EncodedPartition) -> None:
        self.assembler.add(part)
        self.ids.feed_partition(part)

    def close(self, sha256: Callable[[], str]) -> MetadataWritten:
        """Write the members (``sha256()``, the input's digest, is asked for once the spectrum
        metadata's rows are written)."""
        digest = functools.cache(sha256)
        footer = functools.cache(lambda: _footer(self.source, self.options, self.plan, digest()))
        names = self.assembler.finish(footer_key_value(footer))
        return MetadataWritten(
            str(self.folder.path),
            names,
            footer(),
            digest(),
            self.assembler.sequence,
            self.ids.warning(self.source),
        )

    def abort(self) -> None:
        self.assembler.abort()


def _footer(source: Path, options: ConvertOptions, plan: RunPlan, sha256: str) -> dict[str, Any]:
    return footer_metadata(
        plan.survey.run_metadata,
        source=source,
        file_format=plan.format.file_format,
        native_id_format=plan.format.native_id_format,
        sha256=sha256,
        options=options.content_options(),
    )


def _result(
    source: Path,
    output: Path,
    plan: RunPlan,
    counts: dict[str, Any],
    sha256: str,
    members: list[tuple[str, int]],
    warning: str | None,
    path: Path,
) -> ConversionResult:
    return ConversionResult(
        input=str(source),
        output=str(output),
        format=plan.format.name,
        spectra=counts.get(V.SPECTRUM, {}).get("count", 0),
        chromatograms=counts.get(V.CHROMATOGRAM, {}).get("count", 0),
        wavelength_spectra=counts.get(V.WAVELENGTH_SPECTRUM, {}).get("count", 0),
        points=sum(counts.get(e, {}).get("points", 0) for e in (V.SPECTRUM, V.WAVELENGTH_SPECTRUM)),
        chromatogram_points=counts.get(V.CHROMATOGRAM, {}).get("points", 0),
        input_bytes=input_size(source),
        output_bytes=archive_size(path),
        seconds=0.0,
        input_sha256=sha256,
        members=dict(members),
        warnings=[w for w in [warning] if w],
    )


def close_archive(
    source: Path,
    output: Path,
    options: ConvertOptions,
    plan: RunPlan,
    at: Path,
    signal: SignalWritten,
    metadata: MetadataWritten,
) -> ConversionResult:
    """The archive at ``at``, begun by a :class:`SignalWriter`, finished with the members a
    :class:`MetadataWriter` staged (copied: they stay for a second attempt, until the
    caller removes their folder) and ``mzpeak_index.json``; it can be called again on the
    same two (it starts from the signal members each time)."""
    container = Container.resumed(output, at, options.unpacked, signal.begun)
    try:
        add_rest(container, Path(metadata.folder), metadata.names, metadata.footer, keep=True)
        container.close()
    except BaseException:
        container.abort()
        raise
    counts = counts_of(metadata.sequence, signal.centroid_points)
    return _result(
        source,
        output,
        plan,
        counts,
        metadata.sha256,
        container.members,
        metadata.warning,
        at,
    )


__all__ = [
    "ArchiveWriter",
    "MetadataWriter",
    "MetadataWritten",
    "SignalWriter",
    "SignalWritten",
    "close_archive",
]
