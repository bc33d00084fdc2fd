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
from pathlib import Path
from typing import Any

from .. import vocabulary as V
from ..contracts import ConversionResult, EncodedPartition, RunPlan
from ..options import ConvertOptions
from ..readers.identifiers import DuplicateIds
from ..storage.inputs import input_size
from ..tables.file_metadata import footer_metadata
from .assembler import RunAssembler
from .container import Container, archive_size
from .staging import Folder


class ArchiveWriter:
    """Fed a run's written partitions in order, then :meth:`close`\\ d into a finished,
    not yet renamed, archive in ``folder``."""

    def __init__(
        self,
        source: Path,
        output: Path,
        options: ConvertOptions,
        plan: RunPlan,
        folder: Folder,
    ):
        self.source, self.output, self.options, self.plan = source, output, options, plan
        self.container = Container(output, folder, options.unpacked)
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

        def footer() -> dict[str, Any]:
            return footer_metadata(
                self.plan.survey.run_metadata,
                source=self.source,
                file_format=self.plan.format.file_format,
                native_id_format=self.plan.format.native_id_format,
                sha256=digest(),
                options=self.options.content_options(),
            )

        counts = self.assembler.finish(footer)
        self.container.close()
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
            input_bytes=input_size(self.source),
            output_bytes=archive_size(self.path),
            seconds=0.0,
            input_sha256=digest(),
            members=dict(self.container.members),
            warnings=[w for w in [self.ids.warning(self.source)] if w],
        )

    @property
    def path(self) -> Path:
        """The finished archive, before it is renamed into place."""
        return self.container.path

    def abort(self) -> None:
        self.assembler.abort()
        self.container.abort()


__all__ = ["ArchiveWriter"]
