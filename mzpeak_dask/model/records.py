"""Format-neutral records between the input readers and the mzPeak encoders.

Readers (``mzpeak_dask.readers``) turn mzML, mzXML, MGF and mzMLb content into these plain
objects; the encoders (``transforms``, ``layouts``, ``tables``) never see a pyteomics structure.
Every CV term stays a :class:`Param` with its accession and unit; which params become their own
columns is decided once, in ``mzpeak_dask.tables``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..format import vocabulary as V

Value = int | float | str | bool | None


@dataclass(frozen=True, slots=True)
class Param:
    """A cvParam (accession set) or userParam (accession None) with an optional value and unit."""

    name: str | None
    accession: str | None = None
    value: Value = None
    unit: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "accession": self.accession,
            "value": self.value,
            "unit": self.unit,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Param:
        return cls(d.get("name"), d.get("accession"), d.get("value"), d.get("unit"))

    @classmethod
    def term(cls, accession: str, value: Value = None, unit: str | None = None) -> Param:
        """A cvParam of a term this package writes, named as the vocabulary names it."""
        return cls(V.TERM_NAMES[accession], accession, value, unit)


def find_param(params: list[Param], accession: str) -> Param | None:
    """The first param with ``accession``, or None."""
    for p in params:
        if p.accession == accession:
            return p
    return None


@dataclass(slots=True)
class SignalArray:
    """One binary data array: its CV type, display name, unit and decoded values.

    ``name`` is the CV term name (``"m/z array"``) or, for ``MS:1000786`` non-standard arrays, the
    array's own name. ``params`` holds any further cvParams of the binaryDataArray.
    """

    array_type: str
    name: str
    unit: str | None
    values: np.ndarray
    params: list[Param] = field(default_factory=list)
    data_processing_ref: str | None = None

    @property
    def key(self) -> tuple[str, str]:
        """Identity of the array kind within a run: type and (for non-standard arrays) name."""
        return (self.array_type, self.name if self.array_type == V.NON_STANDARD_ARRAY else "")


@dataclass(slots=True)
class ScanRecord:
    params: list[Param] = field(default_factory=list)
    instrument_configuration_ref: str | None = None
    scan_windows: list[list[Param]] = field(default_factory=list)


@dataclass(slots=True)
class SelectedIonRecord:
    params: list[Param] = field(default_factory=list)


@dataclass(slots=True)
class PrecursorRecord:
    spectrum_ref: str | None = None
    isolation_window: list[Param] = field(default_factory=list)
    activation: list[Param] = field(default_factory=list)
    selected_ions: list[SelectedIonRecord] = field(default_factory=list)
    params: list[Param] = field(default_factory=list)


@dataclass(slots=True)
class SpectrumRecord:
    """One spectrum as read from the source, in source order (``position`` is 0-based)."""

    position: int
    id: str
    params: list[Param] = field(default_factory=list)
    scans: list[ScanRecord] = field(default_factory=list)
    precursors: list[PrecursorRecord] = field(default_factory=list)
    arrays: list[SignalArray] = field(default_factory=list)
    data_processing_ref: str | None = None

    def param(self, accession: str) -> Param | None:
        return find_param(self.params, accession)

    @property
    def ms_level(self) -> int | None:
        p = self.param(V.MS_LEVEL)
        return None if p is None or p.value is None else int(p.value)

    @property
    def is_profile(self) -> bool:
        return self.param(V.PROFILE_SPECTRUM) is not None

    @property
    def is_centroid(self) -> bool:
        return self.param(V.CENTROID_SPECTRUM) is not None

    @property
    def is_wavelength_spectrum(self) -> bool:
        """A UV/DAD spectrum: a wavelength array and no m/z array (routed to its own entity)."""
        types = {a.array_type for a in self.arrays}
        return V.WAVELENGTH_ARRAY in types and V.MZ_ARRAY not in types

    @property
    def entity(self) -> str:
        """The entity it is stored as: a wavelength spectrum, else an MS spectrum."""
        return V.WAVELENGTH_SPECTRUM if self.is_wavelength_spectrum else V.SPECTRUM

    def array(self, array_type: str) -> SignalArray | None:
        for a in self.arrays:
            if a.array_type == array_type:
                return a
        return None


@dataclass(slots=True)
class ChromatogramRecord:
    position: int
    id: str
    params: list[Param] = field(default_factory=list)
    precursors: list[PrecursorRecord] = field(default_factory=list)
    product: list[Param] = field(default_factory=list)
    arrays: list[SignalArray] = field(default_factory=list)
    data_processing_ref: str | None = None

    def param(self, accession: str) -> Param | None:
        return find_param(self.params, accession)


@dataclass(slots=True)
class RunMetadata:
    """File-level metadata, already shaped as the mzPeak footer JSON (format doc section 4)."""

    file_description: dict[str, Any] = field(
        default_factory=lambda: {"contents": [], "source_files": []}
    )
    instrument_configuration_list: list[dict[str, Any]] = field(default_factory=list)
    software_list: list[dict[str, Any]] = field(default_factory=list)
    data_processing_method_list: list[dict[str, Any]] = field(default_factory=list)
    sample_list: list[dict[str, Any]] = field(default_factory=list)
    run: dict[str, Any] = field(default_factory=dict)
    # source instrument-configuration id (a string in mzML) -> the integer id written to mzPeak
    instrument_ids: dict[str, int] = field(default_factory=dict)

    def footer(self) -> dict[str, Any]:
        """The six file-level key-value entries, as Python objects (serialised to JSON later)."""
        return {
            "file_description": self.file_description,
            "instrument_configuration_list": self.instrument_configuration_list,
            "data_processing_method_list": self.data_processing_method_list,
            "software_list": self.software_list,
            "sample_list": self.sample_list,
            "run": self.run,
        }
