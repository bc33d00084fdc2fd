"""pyteomics' mzML parser, adapted to keep every binaryDataArray whole and undecoded, and the
conversion of its dicts into :class:`SpectrumRecord` / :class:`ChromatogramRecord`.

pyteomics flattens each binaryDataArray into its spectrum under a guessed name and drops the
array's own params; the subclass below instead hands back :class:`RawArray` objects with all
params, so that non-standard arrays, units and mzMLb external references survive, and so that
decoding (and its errors) happens where the spectrum is known.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

from lxml import etree
from pyteomics import mzml, xml

from ..format import cv
from ..model.records import ChromatogramRecord, SpectrumRecord
from .base import CHROMATOGRAMS, input_error
from .binary import FetchExternal, RawArray, decode_arrays
from .param_values import EXPLICIT_TYPES
from .pyteomics_records import params_of, precursor_of, precursors_of, product_of, scans_of

RAW_ARRAYS = "__raw_arrays__"
_RAW = "__raw__"
_EXTERNAL_NAMES = {"external HDF5 dataset", "external dataset"}
_EXTERNAL_OFFSET = "external offset"
_EXTERNAL_LENGTH = "external array length"


class RecordMzML(mzml.MzML):
    """An :class:`pyteomics.mzml.MzML` that yields raw arrays instead of decoded ones, and
    types a param's value by its XML Schema ``type`` attribute too (``xsd:double``: a float
    whatever its lexical form, ``xsd:integer``: an int), as the lean parser does
    (:mod:`~mzpeak_dask.readers.param_values`)."""

    _param_types = {
        **mzml.MzML._param_types,
        **{
            name: {int: xml.unitint, float: xml.unitfloat, str: xml.unitstr}[kind]
            for name, kind in EXPLICIT_TYPES.items()
        },
    }

    def __init__(self, source: io.BytesIO):
        super().__init__(
            source,
            use_index=False,
            decode_binary=False,
            read_schema=False,
            huge_tree=True,
            iterative=True,
            cv=cv.psi_ms(),
        )
        # pyteomics' schema makes a selected ion's charge state an int through a converter
        # that turns 0 (a value OpenMS writes) into None: the value typed from the CV is kept
        ints = self.schema_info["ints"] - {("selectedIon", "charge state")}
        self.schema_info = {**self.schema_info, "ints": ints}

    def _get_info_smart(self, element, **kwargs):  # noqa: ANN001 - pyteomics signature
        name = xml._local_name(element)
        if name in ("binaryDataArray", "binaryDataArrayList"):
            kwargs.pop("recursive", None)
            info = self._get_info(element, recursive=True, **kwargs)
            if name == "binaryDataArray":
                return {_RAW: _raw_array(info)}
            return {RAW_ARRAYS: [a[_RAW] for a in info.get("binaryDataArray", [])]}
        return super()._get_info_smart(element, **kwargs)


def _raw_array(info: dict) -> RawArray:
    params = [
        p
        for p in params_of(info)
        if p.name not in _EXTERNAL_NAMES and p.name not in (_EXTERNAL_OFFSET, _EXTERNAL_LENGTH)
    ]
    external = None
    dataset = next((info[k] for k in info if k in _EXTERNAL_NAMES), None)
    if dataset is not None:
        external = (str(dataset), int(info[_EXTERNAL_OFFSET]), int(info[_EXTERNAL_LENGTH]))
    payload = info.get("binary")
    declared = info.get("arrayLength")
    return RawArray(
        declared_length=int(declared) if declared is not None else None,
        params=params,
        payload=payload if isinstance(payload, str) else None,
        external=external,
        data_processing_ref=info.get("dataProcessingRef"),
    )


def _arrays(info: dict, name: str, item: str, fetch: FetchExternal) -> list:
    default_length = info.get("defaultArrayLength")
    raws = info.pop(RAW_ARRAYS, [])
    return decode_arrays(
        raws, int(default_length) if default_length is not None else None, name, item, fetch
    )


def spectrum_record(
    info: dict, position: int, name: str, fetch: FetchExternal = None
) -> SpectrumRecord:
    item = f"spectrum {info.get('id', position)!s}"
    arrays = _arrays(info, name, item, fetch)
    scans, scan_list_params = scans_of(info)
    return SpectrumRecord(
        position=position,
        id=str(info.get("id", position)),
        params=params_of(info) + scan_list_params,
        scans=scans,
        precursors=precursors_of(info),
        arrays=arrays,
        data_processing_ref=info.get("dataProcessingRef"),
    )


def chromatogram_record(
    info: dict, position: int, name: str, fetch: FetchExternal = None
) -> ChromatogramRecord:
    item = f"chromatogram {info.get('id', position)!s}"
    arrays = _arrays(info, name, item, fetch)
    precursor = info.get("precursor")
    precursors = [
        precursor_of(p)
        for p in (
            precursor
            if isinstance(precursor, list)
            else [precursor]
            if isinstance(precursor, dict)
            else []
        )
    ]
    return ChromatogramRecord(
        position=position,
        id=str(info.get("id", position)),
        params=params_of(info),
        precursors=precursors,
        product=product_of(info),
        arrays=arrays,
        data_processing_ref=info.get("dataProcessingRef"),
    )


def parse_records(
    document: bytes, kind: str, first_position: int, name: str, fetch: FetchExternal = None
) -> Iterator[SpectrumRecord | ChromatogramRecord]:
    """Parse a self-contained mzML document and yield its spectra or chromatograms (errors
    call the input ``name``, as the user named it)."""
    tag = "chromatogram" if kind == CHROMATOGRAMS else "spectrum"
    convert = chromatogram_record if kind == CHROMATOGRAMS else spectrum_record
    position = first_position
    # pyteomics' reader sits in reference cycles (its RT locator, bound methods), so it and its
    # still-open file are freed only when a full garbage collection happens to run; closing the
    # file here frees the document's text now (a worker's memory stays flat over many partitions)
    buffer = io.BytesIO(document)
    try:
        for info in RecordMzML(buffer).iterfind(tag):
            yield convert(info, position, name, fetch)
            position += 1
    except etree.XMLSyntaxError as exc:
        raise input_error(name, f"malformed XML in {tag} {position} (0-based): {exc}") from None
    finally:
        buffer.close()
