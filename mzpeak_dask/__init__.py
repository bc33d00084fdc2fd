"""mzpeak_dask: Dask-parallel batch conversion of mass-spectrometry runs into PSI mzPeak.

Public API::

    convert(input, output, options=ConvertOptions(), cluster=ClusterOptions(), client=None)
    convert_many([(input, output), ...], ...)
    open_archive(path) -> MzPeakArchive
"""

from __future__ import annotations

from ._version import __version__
from .convert import ConversionResult, convert, convert_many
from .errors import (
    ArchiveError,
    ClusterError,
    InputError,
    MzPeakDaskError,
    OptionsError,
    OutputError,
    SpectrumDecodeError,
    UnsupportedFormatError,
)
from .options import ClusterOptions, ConvertOptions
from .read.archive import MzPeakArchive, open_archive

__all__ = [
    "ArchiveError",
    "ClusterError",
    "ClusterOptions",
    "ConversionResult",
    "ConvertOptions",
    "InputError",
    "MzPeakArchive",
    "MzPeakDaskError",
    "OptionsError",
    "OutputError",
    "SpectrumDecodeError",
    "UnsupportedFormatError",
    "__version__",
    "convert",
    "convert_many",
    "open_archive",
]
