"""mzpeak_dask: Dask-parallel batch conversion of mass-spectrometry runs into PSI mzPeak.

Public API::

    convert(input, output, options=ConvertOptions(), cluster=ClusterOptions(), client=None)
    convert_many([(input, output), ...], ...)
    open_archive(path or URL, storage_options=None) -> MzPeakArchive
    ConvertOptions, ClusterOptions (SlurmOptions), BatchOptions, ZarrOptions, AnalysisOptions,
    StorageOptions
    to_zarr([archive, ...], store, client=None, cluster=None)   # Zarr v3, mzPeak chunks
    mzpeak_dask.analysis: open_runs, xic, tic, base_peak over archives and Zarr stores
"""

from __future__ import annotations

from ._version import __version__
from .convert import convert, convert_many
from .encode.contracts import ConversionResult
from .errors import (
    ArchiveError,
    ClusterError,
    InputError,
    MzPeakDaskError,
    OptionsError,
    OutputError,
    SpectrumDecodeError,
    StorageError,
    UnsupportedFormatError,
    WorkerDiedError,
    ZarrStoreError,
)
from .options import (
    AnalysisOptions,
    BatchOptions,
    ClusterOptions,
    ConvertOptions,
    SlurmOptions,
    StorageOptions,
    ZarrOptions,
)

__all__ = [
    "AnalysisOptions",
    "ArchiveError",
    "BatchOptions",
    "ClusterError",
    "ClusterOptions",
    "ConversionResult",
    "ConvertOptions",
    "InputError",
    "MzPeakArchive",
    "MzPeakDaskError",
    "OptionsError",
    "OutputError",
    "SlurmOptions",
    "SpectrumDecodeError",
    "StorageError",
    "StorageOptions",
    "UnsupportedFormatError",
    "WorkerDiedError",
    "ZarrStoreError",
    "ZarrOptions",
    "__version__",
    "convert",
    "convert_many",
    "open_archive",
    "to_zarr",
]


def __getattr__(name: str):
    # zarr loads only when the export is used, the reader when an archive is opened
    if name == "to_zarr":
        from .export.zarr import to_zarr

        return to_zarr
    if name in ("MzPeakArchive", "open_archive"):
        from .read import archive

        return getattr(archive, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
