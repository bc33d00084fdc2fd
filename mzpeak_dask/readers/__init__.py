"""Input readers: one module per format, all producing :mod:`mzpeak_dask.model.records`.

:func:`detect_format` recognises a file by its content; each format class implements the
:class:`~mzpeak_dask.readers.base.InputFormat` contract (``survey`` on the coordinator,
``read`` on workers).
"""

from __future__ import annotations

from .base import CHROMATOGRAMS, SPECTRA, InputFormat, ItemRange, Survey
from .bruker import BrukerTDFFormat
from .detect import compression_of, decompress_to
from .detect import detect_format as _detect
from .mgf import MGFFormat
from .mzml import MzMLFormat
from .mzmlb import MzMLbFormat
from .mzxml import MzXMLFormat
from .thermo import ThermoRawFormat

FORMATS: dict[str, type[InputFormat]] = {
    f.name: f for f in (MzMLbFormat, MzMLFormat, MzXMLFormat, MGFFormat)
}
FORMATS[ThermoRawFormat.name] = ThermoRawFormat  # the thermo extra's reader (loaded on use)
FORMATS[BrukerTDFFormat.name] = BrukerTDFFormat  # a folder (readers/bruker.py)


def detect_format(path: str, name: str | None = None) -> type[InputFormat]:
    """The format of ``path``, from its content (gzip/bzip2 are looked through); errors call
    it ``name`` (default: ``path``)."""
    return _detect(path, list(FORMATS.values()), name)


__all__ = [
    "CHROMATOGRAMS",
    "FORMATS",
    "SPECTRA",
    "InputFormat",
    "ItemRange",
    "Survey",
    "compression_of",
    "decompress_to",
    "detect_format",
]
