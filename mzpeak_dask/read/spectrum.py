"""What the reader hands out: a spectrum or chromatogram with its arrays and metadata.

The signal arrays and the frequently used fields are filled when the spectrum is read; the
complete params, scans and precursors are looked up on first access (most readers of a spectrum
never need them, and random access stays fast).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from ..format import vocabulary as V
from ..model.records import Param

_EMPTY = np.zeros(0, dtype=np.float64)


@dataclass
class Precursor:
    """One precursor of a spectrum (isolation window, activation, selected ions)."""

    precursor_index: int | None
    precursor_id: str | None
    isolation_window: dict[str, Any]
    activation: list[Param]
    selected_ions: list[dict[str, Any]]

    @property
    def mz(self) -> float | None:
        """The m/z of the first selected ion (None when the precursor names no ion)."""
        return self.selected_ions[0].get("mz") if self.selected_ions else None

    @property
    def target_mz(self) -> float | None:
        """The selected ion m/z, else the isolation window target (e.g. DIA windows)."""
        return self.mz if self.mz is not None else self.isolation_window.get("target")

    @property
    def charge(self) -> int | None:
        return self.selected_ions[0].get("charge") if self.selected_ions else None


class ItemTables(Protocol):
    """Where a spectrum looks up its complete metadata on first access (the entity's tables,
    :class:`~mzpeak_dask.read.entity.EntityTables`)."""

    def params(self, position: int) -> list[Param]: ...

    def rows_for(self, table_name: str, position: int) -> list[dict[str, Any]]: ...

    def precursors(self, position: int) -> list[Precursor]: ...


class Spectrum:
    """One spectrum: ``mz``, ``intensity`` and every other array in ``arrays``, plus metadata."""

    def __init__(
        self,
        index: int,
        id: str,
        ms_level: int | None,
        time: float | None,
        arrays: dict[str, np.ndarray],
        tables: ItemTables | None = None,
        polarity: int | None = None,
        representation: str | None = None,
    ):
        self.index = index
        self.id = id
        self.ms_level = ms_level
        self.time = time  # minutes
        self.arrays = arrays
        self.polarity = polarity
        self.representation = representation  # "MS:1000127" centroid / "MS:1000128" profile
        self._tables = tables

    @property
    def mz(self) -> np.ndarray:
        return self.arrays.get("m/z array", _EMPTY)

    @property
    def intensity(self) -> np.ndarray:
        return self.arrays.get("intensity array", _EMPTY)

    @property
    def is_centroid(self) -> bool:
        return self.representation == V.CENTROID_SPECTRUM

    @cached_property
    def params(self) -> list[Param]:
        """Every param of the spectrum (promoted columns and ``parameters``)."""
        return self._tables.params(self.index) if self._tables else []

    @cached_property
    def scans(self) -> list[dict[str, Any]]:
        return self._tables.rows_for("scan", self.index) if self._tables else []

    @cached_property
    def precursors(self) -> list[Precursor]:
        return self._tables.precursors(self.index) if self._tables else []

    def __len__(self) -> int:
        return len(self.mz)

    def __repr__(self) -> str:
        return (
            f"Spectrum(index={self.index}, id={self.id!r}, ms_level={self.ms_level}, "
            f"time={self.time}, points={len(self)})"
        )


@dataclass
class Chromatogram:
    index: int
    id: str
    arrays: dict[str, np.ndarray]
    params: list[Param]
    chromatogram_type: str | None = None

    @property
    def time(self) -> np.ndarray:
        return self.arrays.get("time array", _EMPTY)

    @property
    def intensity(self) -> np.ndarray:
        return self.arrays.get("intensity array", _EMPTY)

    def __repr__(self) -> str:
        return f"Chromatogram(index={self.index}, id={self.id!r}, points={len(self.time)})"
