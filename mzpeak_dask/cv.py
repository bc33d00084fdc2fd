"""Offline access to the PSI-MS and UO controlled vocabularies bundled with psims.

psims tries the network before its vendored ontology unless told not to, and a cluster node
often has no network: :func:`psi_ms` and :func:`unit_ontology` switch the remote lookup off
before anything loads. Both are loaded lazily (about a second) and cached per process; the hot
conversion path never needs them.
"""

from __future__ import annotations

from functools import cache
from typing import Any


def _offline_cache() -> Any:
    from psims.controlled_vocabulary.controlled_vocabulary import obo_cache

    obo_cache.use_remote = False
    return obo_cache


@cache
def psi_ms() -> Any:
    """The PSI-MS ontology (psims ControlledVocabulary)."""
    _offline_cache()
    from psims.controlled_vocabulary.controlled_vocabulary import load_psims

    return load_psims()


@cache
def unit_ontology() -> Any:
    """The Unit Ontology (psims ControlledVocabulary)."""
    _offline_cache()
    from psims.controlled_vocabulary.controlled_vocabulary import load_uo

    return load_uo()


def _vocabulary_for(accession: str) -> Any | None:
    prefix = accession.split(":", 1)[0]
    if prefix == "MS":
        return psi_ms()
    if prefix == "UO":
        return unit_ontology()
    return None


def term_name(accession: str | None) -> str | None:
    """The term name for ``accession``, or None when it is not in the bundled vocabularies."""
    if not accession:
        return None
    vocabulary = _vocabulary_for(accession)
    if vocabulary is None:
        return None
    try:
        return vocabulary[accession].name
    except KeyError:
        return None


def is_known(accession: str) -> bool:
    return term_name(accession) is not None


def descendants(accession: str) -> frozenset[str]:
    """Every term below ``accession`` (transitively, through is_a)."""
    vocabulary = _vocabulary_for(accession)
    out: set[str] = set()
    stack = [vocabulary[accession]]
    while stack:
        for child in stack.pop().children:
            if child.id not in out:
                out.add(child.id)
                stack.append(child)
    return frozenset(out)


def versions() -> dict[str, str]:
    """The versions of the bundled vocabularies, for ``cv_list`` in mzpeak_index.json."""
    uo_version = getattr(unit_ontology(), "version", None)
    return {"MS": str(psi_ms().version), "UO": str(uo_version) if uo_version else "unknown"}
