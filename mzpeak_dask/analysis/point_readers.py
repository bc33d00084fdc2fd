"""Readers of a run's stored points from inside one task, block by block.

A :class:`~mzpeak_dask.analysis.source.Run` hands out a reader over some of its spectra
(:meth:`~mzpeak_dask.analysis.source.Run.point_readers`); the task that holds it reads its
blocks one after the other, each pruned to the m/z windows the task still needs for that
block, so a task reads only what its own work needs and keeps only what it computes from a
block. Readers are small and picklable: they name the file and the spectra (or mzPeak
chunks), never hold data.

Each spectrum is known by a *position* given by the caller (its place in the caller's own
numbering), which the reader hands back with every point. An archive's reader, which reads
through the archive's own block functions, is :class:`~mzpeak_dask.analysis.archive_run.
ArchivePoints`; a Zarr run group's is here.
"""

from __future__ import annotations

import numpy as np

from ..zarr_runs.frames import Frames
from .kernels import overlapping


class ZarrPoints:
    """mzPeak chunks of a Zarr run group: their frames of m/z and intensity, and per chunk
    its spectrum's position, points and m/z range; read in batches ``cuts`` of whole
    spectra (chunk rows ``cuts[k]:cuts[k + 1]``)."""

    def __init__(
        self,
        mz: Frames,
        intensity: Frames,
        position: np.ndarray,
        lengths: np.ndarray,
        bounds: tuple[np.ndarray, np.ndarray],
        cuts: list[int],
    ):
        self.mz, self.intensity = mz, intensity
        self.at = np.asarray(position, dtype=np.int64)
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.low, self.high = bounds
        self.cuts = cuts

    @property
    def blocks(self) -> int:
        return len(self.cuts) - 1

    def positions(self, k: int) -> np.ndarray:
        return np.unique(self.at[self.cuts[k] : self.cuts[k + 1]])

    def read(self, k: int, windows: tuple | None) -> tuple:
        """``(mz, intensity, position)`` of the points of batch ``k``'s chunks whose m/z range
        meets ``windows`` (all when None)."""
        rows = np.arange(self.cuts[k], self.cuts[k + 1])
        if windows is not None:
            rows = rows[overlapping(self.low[rows], self.high[rows], *windows)]
        mz = np.asarray(self.mz.read(rows), dtype=np.float64)
        intensity = np.asarray(self.intensity.read(rows), dtype=np.float64)
        return mz, intensity, np.repeat(self.at[rows], self.lengths[rows])


__all__ = ["ZarrPoints"]
