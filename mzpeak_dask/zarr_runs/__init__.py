"""Zarr run groups, the store the Zarr export writes and the analysis reads: what a run group
holds, and the plumbing both use (rectilinear chunk grids, chunk objects made of one
Zstandard frame per mzPeak chunk, direct reads of those frames, Dask arrays over rectilinear
arrays). The layout is described in docs/zarr-layout.md and :mod:`mzpeak_dask.export.zarr`.

A run group carries the attribute ``format = FORMAT`` and, beside its signal arrays, the
per-mzPeak-chunk, per-spectrum and per-Zarr-chunk arrays named below.
"""

from __future__ import annotations

FORMAT = "mzpeak-dask zarr export 3"
# what every format of this export's run groups starts with (an older one is refused)
FORMAT_FAMILY = "mzpeak-dask zarr export"
# one value per mzPeak chunk, stored as one Zstandard frame per Zarr chunk of the signal
# arrays (the entries of its mzPeak chunks), so a reader inflates only the Zarr chunks a query
# needs. chunk_lengths: points of each mzPeak chunk; chunk_frame_bytes: per signal array (in
# the order of the ``arrays`` attribute) the byte size of each mzPeak chunk's frame, one
# (arrays x chunks) block per Zarr chunk, array by array
CHUNK_LENGTHS = "chunk_lengths"
FRAME_BYTES = "chunk_frame_bytes"
PER_CHUNK = ("chunk_spectrum_index", "chunk_start", "chunk_end")
CHUNK_TABLES = (CHUNK_LENGTHS, *PER_CHUNK, FRAME_BYTES)
# one value per spectrum (spectrum_offsets has one more)
PER_SPECTRUM = ("spectrum_offsets", "time", "ms_level", "precursor_mz")
# one value per Zarr chunk of the signal arrays: the ranges a reader prunes Zarr chunks with
PER_ZARR_CHUNK = (
    "zarr_chunk_mz_min",
    "zarr_chunk_mz_max",
    "zarr_chunk_time_min",
    "zarr_chunk_time_max",
)
# per Zarr chunk: its first mzPeak chunk (Zarr chunks + 1 values), and the byte size of its
# frame in each per-mzPeak-chunk table (CHUNK_TABLES x Zarr chunks values, table by table)
ZARR_CHUNK_FIRST = "zarr_chunk_first"
TABLE_BYTES = "zarr_chunk_table_bytes"
TABLES = (*CHUNK_TABLES, *PER_SPECTRUM, *PER_ZARR_CHUNK, ZARR_CHUNK_FIRST, TABLE_BYTES)

__all__ = [
    "CHUNK_LENGTHS",
    "CHUNK_TABLES",
    "FORMAT",
    "FORMAT_FAMILY",
    "FRAME_BYTES",
    "PER_CHUNK",
    "PER_SPECTRUM",
    "PER_ZARR_CHUNK",
    "TABLES",
    "TABLE_BYTES",
    "ZARR_CHUNK_FIRST",
]
