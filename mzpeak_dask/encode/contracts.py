"""The contracts between the stages of a conversion: plain data handed from one stage to the
next, so that each stage depends on these and not on the stage before it.

::

    partition.plan_run      (the plan task)          -> RunPlan: EncodeSpec, [Partition]
    encode.encode_partition (a partition's task)     -> EncodedPartition (local indices)
    archive.parts.write_partition (same, offsets)    -> EncodedPartition (Parquet parts)
    archive.writer.ArchiveWriter (in order, in the task finishing the run) -> ConversionResult

Everything here pickles cheaply (a partition crosses the network to a worker, and a plan or an
encoded partition comes back); none of it reads or writes a file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..layouts.schema import SignalSchema
from ..options import ConvertOptions
from ..readers.base import SHA256_HINT, InputFormat, ItemRange, Survey

PEAKS = "peaks"  # key of the spectra_peaks columns in EncodeSpec.schemas

Progress = Callable[[str, int, int], None]  # (input, items done, items total)


@dataclass(frozen=True)
class EncodeSpec:
    """Everything a worker needs besides its item range (fixed for the whole run)."""

    options: ConvertOptions
    schemas: dict[str, SignalSchema]  # entity (or PEAKS) -> data columns
    instrument_ids: dict[str, int]
    default_data_processing: str | None = None  # the run's default_data_processing_id


@dataclass(frozen=True)
class Partition:
    """A unit of work: plain data, cheap to pickle."""

    sequence: int
    path: str  # what the worker reads
    format: str
    items: ItemRange
    hints: dict[str, object] = field(default_factory=dict)
    name: str = ""  # what errors call the input: the path or URL the user gave (else path)

    @property
    def named(self) -> str:
        return self.name or self.path


@dataclass
class RunPlan:
    """What the coordinator decides about a run before the workers start."""

    source: Path  # the input as given
    readable: str  # the file workers open (a decompressed copy for .gz / .bz2 inputs)
    format: type[InputFormat]
    survey: Survey
    spec: EncodeSpec
    partitions: list[Partition]
    sampled: frozenset[str] = frozenset()  # the entities of the items the plan sampled
    name: str = ""  # what errors call the input: the path or URL the user gave (else source)

    @property
    def spectrum_count(self) -> int:
        return self.survey.spectrum_count

    @property
    def source_sha256(self) -> str | None:
        """The input's SHA-256 when its survey read it whole (the file itself, not a
        decompressed copy), else None."""
        same = self.readable == str(self.source)
        return self.survey.hints.get(SHA256_HINT) if same else None  # type: ignore[return-value]


@dataclass
class EncodedPartition:
    """A partition's tables, with entity indices local to the partition (0-based per entity);
    once written (``offsets`` set, see :mod:`mzpeak_dask.archive.parts`), ``data`` and ``peaks``
    hold finished Parquet files (``pyarrow.Buffer``) and the metadata rows global indices."""

    sequence: int
    kind: str
    counts: dict[str, int] = field(default_factory=dict)  # entity -> items
    points: dict[str, int] = field(default_factory=dict)  # entity -> stored points
    data: dict[str, pa.Table] = field(default_factory=dict)  # entity -> layout table
    peaks: pa.Table | None = None  # spectra_peaks rows (point layout), local indices
    peak_spectra: int = 0  # spectra with a peak list in ``peaks``
    peak_points: int = 0
    centroid_points: int = 0  # of ``peak_points``: centroid spectra stored only in ``peaks``
    metadata: dict[str, dict[str, pa.Array]] = field(default_factory=dict)
    selected_ion_refs: dict[str, list] = field(default_factory=dict)
    # members (entities, or PEAKS) with an item whose main axis is not in ascending order
    unsorted: set[str] = field(default_factory=set)
    offsets: dict[str, int] | None = None  # entity -> items before this partition, once written
    # member (entity, or PEAKS) -> its part's footer cut for splicing (a PartSplice), once written
    splices: dict[str, Any] = field(default_factory=dict)

    def __sizeof__(self) -> int:
        """The bytes it holds (Dask weighs results by ``sys.getsizeof``: so it runs the step
        that writes a partition where the encoded partition is, rather than moving it)."""
        held = list(self.data.values()) + [self.peaks]
        held += [rows for tables in self.metadata.values() for rows in tables.values()]
        return object.__sizeof__(self) + sum(_nbytes(x) for x in held)


def _nbytes(x: Any) -> int:
    """Bytes of an Arrow table or array (``nbytes``) or buffer (``size``); 0 for None."""
    return getattr(x, "nbytes", None) or getattr(x, "size", 0) or 0


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
    # a batch's check of the archive, when the worker that finished the run made it (see
    # mzpeak_dask.read.inspection.inspect_output); not part of the result shown to users
    inspection: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        fields = asdict(self)
        del fields["inspection"]
        return fields


__all__ = [
    "PEAKS",
    "ConversionResult",
    "EncodeSpec",
    "EncodedPartition",
    "Partition",
    "Progress",
    "RunPlan",
]
