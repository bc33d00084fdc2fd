"""The contract between the analysis and what it reads, in the way xarray's backends are
written: a :class:`RunSource` says whether it can open a path (``guess_can_open``), then opens
it into runs (``open``); every :class:`Run` offers the same spectrum table and lazy pieces, so
the chromatograms never ask which kind of source a run came from.

:data:`mzpeak_dask.analysis.runs.SOURCES` lists the sources, in the order they are asked.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd


class Run(ABC):
    """One run: ``spectra`` (indexed by ``spectrum_index``: ``time`` in minutes, ``ms_level``,
    ``precursor_mz``) is read when it is opened; signal is read by the lazy pieces."""

    name: str  # the key of the run's results (made unique among the runs of a call)
    source: str  # where it was opened from
    spectra: pd.DataFrame

    @abstractmethod
    def xic_parts(self, ids: np.ndarray, low: np.ndarray, high: np.ndarray) -> list[Any]:
        """Lazy ``(rows, sums)`` pieces of the XICs of spectra ``ids`` (sorted): ``rows`` are
        positions in ``ids``, ``sums`` the summed intensity within each ``[low, high]``."""

    @abstractmethod
    def stats_parts(self, ids: np.ndarray) -> list[Any]:
        """Lazy ``(rows, [tic, base peak m/z, base peak intensity])`` pieces of ``ids``."""

    @abstractmethod
    def point_readers(
        self, ids: np.ndarray, groups: list[np.ndarray], windows: list[tuple] | None = None
    ) -> list[Any]:
        """Per group (sorted positions in ``ids``, sorted; groups may share spectra) a small
        picklable reader of the stored points of its spectra, read block by block inside a
        task (:mod:`~mzpeak_dask.analysis.point_readers`: ``blocks``, ``positions(k)``,
        ``read(k, windows)``; positions are those in ``ids``). ``windows``: per group the
        m/z windows ``(low, high)`` its points can lie in (chunks meeting none are not read,
        where the layout allows it)."""

    @abstractmethod
    def points(self, ids: np.ndarray | None = None) -> Any:
        """A Dask dataframe (spectrum_index, mz, intensity) of spectra ``ids`` (default all)."""


class RunSource(ABC):
    """One kind of source of runs."""

    name: ClassVar[str]

    @classmethod
    @abstractmethod
    def guess_can_open(cls, path: Path) -> bool:
        """Whether ``path`` (which exists) looks like this kind of source."""

    @classmethod
    @abstractmethod
    def open(cls, path: Path) -> list[Run]:
        """The runs of ``path``."""


__all__ = ["Run", "RunSource"]
