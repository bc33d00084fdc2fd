"""Exports of mzPeak archives to other stores: :func:`mzpeak_dask.export.zarr.to_zarr` (Zarr v3
groups on rectilinear grids of whole spectra, one Zstandard frame per mzPeak chunk).

``to_zarr`` and ``ZarrRunResult`` are loaded on first use, so the command line does not pay
for importing zarr unless it exports."""

from __future__ import annotations

from typing import Any

__all__ = ["ZarrRunResult", "to_zarr"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import zarr

        return getattr(zarr, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
