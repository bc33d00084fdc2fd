"""The PSI-MS terms the Thermo reader writes are the vocabulary's, names verbatim, and a model
name finds its instrument model term (read from the OBO file psims bundles, checked here
against psims' own parse of it)."""

from __future__ import annotations

from mzpeak_dask.format import cv
from mzpeak_dask.readers import thermo_terms as T


def test_terms_are_the_vocabulary_terms() -> None:
    pairs = [
        (T.THERMO_RAW_FORMAT.name, T.THERMO_RAW_FORMAT.accession),
        (T.THERMO_NATIVE_ID.name, T.THERMO_NATIVE_ID.accession),
        T.SERIAL_NUMBER,
        T.THERMO_MODEL,
        T.SUPPLEMENTAL_CID,
        T.SUPPLEMENTAL_HCD,
        *T.ACTIVATIONS.values(),
        *T.IONIZATIONS.values(),
        *(pair for both in T.ANALYZERS.values() for pair in both),
    ]
    for name, accession in pairs:
        assert cv.term_name(accession) == name, accession


def test_model_names_find_their_terms() -> None:
    models = T.thermo_models()
    below = cv.descendants("MS:1000483") | cv.descendants("MS:1000494")
    assert {accession for _, accession in models.values()} == below
    lumos = T.model_param("Orbitrap Fusion Lumos")
    assert (lumos.name, lumos.accession) == ("Orbitrap Fusion Lumos", "MS:1002732")
    unknown = T.model_param("Orbitrap Imaginary")
    assert (unknown.accession, unknown.value) == ("MS:1000483", "Orbitrap Imaginary")
