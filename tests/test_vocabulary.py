"""The CV constants and term families of ``vocabulary.py`` against the bundled PSI-MS and UO
vocabularies (psims, offline): a typo'd accession or a family missing a term fails here."""

from __future__ import annotations

import re

import pytest

from mzpeak_dask.format import cv
from mzpeak_dask.format import vocabulary as V

FAMILIES = {
    "MS:1000559": V.SPECTRUM_TYPES,
    "MS:1000626": V.CHROMATOGRAM_TYPES,
    "MS:1000513": V.ARRAY_TYPES,
    "MS:1000518": V.BINARY_DATA_TYPES,
    "MS:1000572": V.COMPRESSIONS,
    "MS:1002892": V.ION_MOBILITY_ATTRIBUTES,
    "MS:1000044": V.DISSOCIATION_METHODS,
    "MS:1000465": V.SCAN_POLARITIES,
    "MS:1000525": V.REPRESENTATIONS,
}
ACCESSION = re.compile(r"(MS|UO):\d{7}")


@pytest.mark.parametrize("parent", sorted(FAMILIES))
def test_family_is_every_term_below_its_parent(parent) -> None:
    family = FAMILIES[parent]
    assert set(family) == cv.descendants(parent)
    assert {k: cv.term_name(k) for k in family} == family


def test_every_accession_constant_is_a_term() -> None:
    constants = {
        name: value
        for name, value in vars(V).items()
        if isinstance(value, str) and ACCESSION.fullmatch(value)
    }
    assert len(constants) > 50
    assert [name for name, value in constants.items() if not cv.is_known(value)] == []


def test_array_short_names_and_units_are_terms() -> None:
    assert all(cv.is_known(k) for k in V.ARRAY_SHORT_NAME)
    assert all(cv.is_known(k) for k in V.UNIT_CODE)
    assert set(V.ION_MOBILITY_UNITS) <= set(V.ION_MOBILITY_ATTRIBUTES)


def test_term_names_are_the_vocabulary_names() -> None:
    assert {k: cv.term_name(k) for k in V.TERM_NAMES} == V.TERM_NAMES


def test_value_types_read_from_the_obo_are_psims_own() -> None:
    """The conversion reads PSI-MS value types without loading psims: the same relations."""
    from psims.controlled_vocabulary.relationship import HasValueTypeRelationship

    terms = cv.psi_ms().terms
    read = cv.value_types()
    for accession, term in terms.items():
        relations = [r for r in term.relationship if isinstance(r, HasValueTypeRelationship)]
        assert read.get(accession, ()) == tuple(r.value_type.id for r in relations), accession
    assert set(read) <= set(terms)
    assert sum(len(v) for v in read.values()) > 1000


def test_versions_read_from_the_obo_are_psims_own() -> None:
    assert cv.versions() == {
        "MS": str(cv.psi_ms().version),
        "UO": str(cv.unit_ontology().version),
    }


def test_term_lookup_read_from_the_obo_is_psims_own() -> None:
    """mzXML instrument values are looked up without loading psims: every key psims' query
    knows (ids, names, synonyms, obsolete names, in other case too) finds the same term, and
    keys it does not know find none."""
    vocabulary = cv.psi_ms()
    keys = [
        *vocabulary.terms,
        *vocabulary._names,
        *vocabulary._synonyms,
        *vocabulary._obsolete_names,
        "Thermo Scientific",
        "LTQ Orbitrap Velos",
        "nanoelectrospray",
        "FTMS",
        "unknown",
        "MS:0000000",
        "ms:1000031",
        "",
    ]
    keys += [k.upper() for k in keys] + [k.title() for k in keys]
    misses = 0
    for key in keys:
        try:
            term = vocabulary[key]
            expected = (term.name, term.id)
        except KeyError:
            expected, misses = None, misses + 1
        assert cv.psi_ms_term(key) == expected, key
    assert misses > 10
