"""Zarr run groups, the store the Zarr export writes and the analysis reads: what a run group
holds, and the plumbing both use (rectilinear chunk grids, chunk objects made of one
Zstandard frame per mzPeak chunk, direct reads of those frames, Dask arrays over rectilinear
arrays). The layout is described in docs/zarr-layout.md and :mod:`mzpeak_dask.export.zarr`.

A run group carries the attribute ``format = FORMAT`` and, beside its signal arrays, the
per-mzPeak-chunk, per-spectrum and per-Zarr-chunk arrays named below.
"""

from __future__ import annotations

FORMAT = "mzpeak-dask zarr export 2"
# one value per mzPeak chunk (chunk_offsets has one more: the point offsets, n + 1)
PER_CHUNK = ("chunk_spectrum_index", "chunk_start", "chunk_end")
# one value per spectrum (spectrum_offsets has one more)
PER_SPECTRUM = ("spectrum_offsets", "time", "ms_level", "precursor_mz")
# one value per Zarr chunk of the signal arrays: the ranges a reader prunes Zarr chunks with
PER_ZARR_CHUNK = (
    "zarr_chunk_mz_min",
    "zarr_chunk_mz_max",
    "zarr_chunk_time_min",
    "zarr_chunk_time_max",
)
# the frames: point offsets of the mzPeak chunks (n + 1), and per signal array (in the order
# of the ``arrays`` attribute) the byte size of each mzPeak chunk's frame (arrays x n values)
CHUNK_OFFSETS = "chunk_offsets"
FRAME_BYTES = "chunk_frame_bytes"
TABLES = (*PER_CHUNK, CHUNK_OFFSETS, FRAME_BYTES, *PER_SPECTRUM, *PER_ZARR_CHUNK)

__all__ = [
    "CHUNK_OFFSETS",
    "FORMAT",
    "FRAME_BYTES",
    "PER_CHUNK",
    "PER_SPECTRUM",
    "PER_ZARR_CHUNK",
    "TABLES",
]
