"""Errors raised by mzpeak_dask.

Every error the package raises on purpose derives from :class:`MzPeakDaskError`, and each
subclass also inherits the builtin exception a caller would naturally catch, so that
``except ValueError`` keeps working. Messages are one line a user can act on and name the file
(and the spectrum, where one is involved).
"""

from __future__ import annotations


class MzPeakDaskError(Exception):
    """Root of every error raised by mzpeak_dask."""


class InputError(MzPeakDaskError, ValueError):
    """The input file cannot be read as MS data (missing, not MS data, truncated, corrupt)."""


class TargetsError(InputError):
    """A target list (``quantify``) is unusable: a missing column, an empty list, or a row
    with a bad value (the message names the row)."""


class ZarrStoreError(InputError):
    """A Zarr store of exported runs is damaged (unreadable metadata, a chunk that is missing,
    garbled, or inflates past the size its array declares) or not one the export writes."""


class UnsupportedFormatError(InputError):
    """The input's format could not be detected or is not supported."""


class SpectrumDecodeError(InputError):
    """One spectrum's (or chromatogram's) binary data could not be decoded."""


class NumpressDecodeError(MzPeakDaskError, ValueError):
    """An MS-Numpress buffer is malformed."""


class NumpressEncodeError(MzPeakDaskError, ValueError):
    """Values MS-Numpress cannot encode (the C++ reference throws, or would write junk)."""


class OutputError(MzPeakDaskError, OSError):
    """The output cannot be written (exists, unwritable location, disk full)."""


class OutputExistsError(OutputError):
    """The output exists and the caller did not allow replacing it. The message names the
    Python API's parameter (``overwrite=True``); :attr:`command_line` the flag instead."""

    def __init__(self, where: object) -> None:
        self.where = where
        super().__init__(f"{where}: already exists (pass overwrite=True to replace it)")

    def __reduce__(self) -> tuple:  # rebuilt from its output on the other side of a pickle
        return (type(self), (self.where,))

    @property
    def command_line(self) -> str:
        return f"{self.where}: already exists (use --overwrite to replace it)"


class OutputBusyError(OutputError):
    """Another process is writing into the output folder (a batch holds its lock)."""


class StorageError(MzPeakDaskError, OSError):
    """An object store or web server refused a request, or a URL cannot be used as asked."""


class ExtraMissingError(MzPeakDaskError, ImportError):
    """A URL needs an optional client that is not installed (the message names the extra)."""


class ArchiveError(MzPeakDaskError, ValueError):
    """An mzPeak archive is malformed or uses something this reader does not understand."""


class OptionsError(MzPeakDaskError, ValueError):
    """An option or configuration value is invalid."""


class ClusterError(MzPeakDaskError, RuntimeError):
    """The Dask cluster could not be started or reached, or lost work it cannot recover."""


class WorkerDiedError(ClusterError):
    """A worker process died each time it ran one of a run's tasks (the input may exhaust the
    worker's memory or crash it): that run fails, and a batch tries it again alone."""
