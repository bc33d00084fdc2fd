"""Writing one run's archive from its written partitions: the data members stitched from the
parts, the packed metadata members, ``mzpeak_index.json`` and the container, in a folder.

The task that finishes a run (:func:`mzpeak_dask.parallel.tasks.finish`, on a worker or in
this process) runs it. It copies the signal parts and decodes or compresses no signal page;
the archive it leaves in its folder is complete, and
:func:`~mzpeak_dask.archive.container.put_in_place` renames it to the output.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..encode.contracts import ConversionResult, EncodedPartition, RunPlan
from ..format import vocabulary as V
from ..options import ConvertOptions
from ..readers.identifiers import DuplicateIds
from ..storage.inputs import input_size
from ..tables.file_metadata import footer_metadata
from .assembler import RunAssembler
from .container import Container, archive_size
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
            self.ids.warning(self.plan.name or self.source),
            self.path,
        )

    @property
    def path(self) -> Path:
        """The finished archive, before it is renamed into place."""
        return self.container.path

    def abort(self) -> None:
        self.assembler.abort()
        self.container.abort()


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


__all__ = ["ArchiveWriter"]
