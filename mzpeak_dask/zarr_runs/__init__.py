"""Zarr run groups, the store the Zarr export writes and the analysis reads: what a run group
holds, and the plumbing both use (rectilinear chunk grids, the codec pipeline for tiny chunks,
direct chunk-object reads and writes, Dask arrays over rectilinear arrays).

A run group (see :mod:`mzpeak_dask.export.zarr`) carries the attribute ``format = FORMAT``
and, beside its signal arrays, the per-chunk and per-spectrum arrays named below.
"""

from __future__ import annotations

FORMAT = "mzpeak-dask zarr export 1"
PER_CHUNK = ("chunk_spectrum_index", "chunk_start", "chunk_end")
PER_SPECTRUM = ("spectrum_offsets", "time", "ms_level", "precursor_mz")

__all__ = ["FORMAT", "PER_CHUNK", "PER_SPECTRUM"]
