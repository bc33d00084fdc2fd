"""The contract every input format implements.

The coordinator calls :meth:`InputFormat.survey` once (counts, byte offsets, file-level
metadata); workers call :meth:`InputFormat.read` with an :class:`ItemRange` — plain data, so a
worker opens the file itself and nothing unpicklable crosses the network.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..errors import InputError, SpectrumDecodeError
from ..model.records import ChromatogramRecord, Param, RunMetadata, SpectrumRecord

SPECTRA = "spectrum"
CHROMATOGRAMS = "chromatogram"
# a survey that reads the whole input in order may leave its SHA-256 in the hints under this
# key: the archive records it instead of reading the input once more to hash it
SHA256_HINT = "sha256"
SAMPLE_HEAD = 8
SAMPLE_SPREAD = 8


def sample_positions(n: int) -> list[int]:
    """The items a plan samples for its data columns: the first ones and some spread evenly
    over the run (depends only on ``n``; a survey of an object in storage fetches them whole
    while checking its offsets, so the plan's sample costs no request more)."""
    head = set(range(min(n, SAMPLE_HEAD)))
    spread = set(np.linspace(0, n - 1, num=min(n, SAMPLE_SPREAD), dtype=np.int64).tolist())
    return sorted(head | spread) if n else []


@dataclass(frozen=True, slots=True)
class ItemRange:
    """Items ``[start, stop)`` of one kind; byte offsets when the format has them."""

    kind: str
    start: int
    stop: int
    byte_start: int | None = None
    byte_stop: int | None = None

    def __len__(self) -> int:
        return self.stop - self.start


@dataclass(slots=True)
class Survey:
    """What the coordinator learns about an input before any spectrum is parsed."""

    spectrum_count: int
    chromatogram_count: int
    run_metadata: RunMetadata
    # n+1 byte offsets (the last is the end of the list), when the format can seek
    spectrum_offsets: np.ndarray | None = None
    chromatogram_offsets: np.ndarray | None = None
    # format-specific facts workers need (plain, picklable values)
    hints: dict[str, object] = field(default_factory=dict)

    def count(self, kind: str) -> int:
        return self.spectrum_count if kind == SPECTRA else self.chromatogram_count

    def offsets(self, kind: str) -> np.ndarray | None:
        return self.spectrum_offsets if kind == SPECTRA else self.chromatogram_offsets


class InputFormat(ABC):
    """One input format (mzML, mzXML, MGF, mzMLb).

    ``path`` is what a reader opens (a local file, a decompressed copy in a staging folder,
    or the URL of an object read by ranges); ``name`` is what its errors call the input, the
    path or URL the user gave (default: ``path``)."""

    name: ClassVar[str]
    file_format: ClassVar[Param]  # the PSI-MS file format term of the source file
    native_id_format: ClassVar[Param | None] = None

    @classmethod
    @abstractmethod
    def sniff(cls, head: bytes) -> bool:
        """True when the first bytes of a (decompressed) file look like this format."""

    @classmethod
    def sniff_folder(cls, path: str) -> bool:
        """True when the local folder ``path`` is one input of this format (a vendor folder
        such as Bruker's ``.d``); formats read from one file keep False."""
        return False

    @classmethod
    @abstractmethod
    def survey(cls, path: str, name: str | None = None) -> Survey:
        """Counts, offsets and file-level metadata (run on the coordinator)."""

    @classmethod
    @abstractmethod
    def read(
        cls, path: str, items: ItemRange, hints: dict[str, object], name: str | None = None
    ) -> Iterator[SpectrumRecord | ChromatogramRecord]:
        """Yield the records of ``items`` in order (run on workers)."""


def spectrum_error(name: str, item: str, message: str) -> SpectrumDecodeError:
    """One item's error, naming the input as the user did (``name``) and the item."""
    return SpectrumDecodeError(f"{name}: {item}: {message}")


def input_error(name: str, message: str) -> InputError:
    """The input's error, naming it as the user did (``name``)."""
    return InputError(f"{name}: {message}")
