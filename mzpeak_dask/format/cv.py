"""Offline access to the PSI-MS and UO controlled vocabularies bundled with psims.

psims tries the network before its vendored ontology unless told not to, and a cluster node
often has no network: :func:`psi_ms` and :func:`unit_ontology` switch the remote lookup off
before anything loads. Both are loaded lazily (about a second: psims imports SQLAlchemy) and
cached per process; the conversion never needs them. What it needs — the vocabularies'
versions and the value types of PSI-MS terms — :func:`versions` and :func:`value_types` read
straight from the same vendored OBO files (a test holds them to what psims says).
"""

from __future__ import annotations

import gzip
import importlib.util
from functools import cache
from pathlib import Path
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


def _vendored(name: str) -> Path:
    """A vocabulary file psims bundles, found without importing psims."""
    spec = importlib.util.find_spec("psims")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError("psims is not installed")
    return Path(spec.origin).parent / "controlled_vocabulary" / "vendor" / name


def _data_version(name: str) -> str | None:
    with gzip.open(_vendored(name), "rt", encoding="utf-8") as f:
        for line in f:
            if line.startswith("data-version:"):
                return line.split(":", 1)[1].strip()
            if line.startswith("["):  # the header ends at the first stanza
                return None
    return None


@cache
def versions() -> dict[str, str]:
    """The versions of the bundled vocabularies, for ``cv_list`` in mzpeak_index.json."""
    return {
        "MS": _data_version("psi-ms.obo.gz") or "unknown",
        "UO": _data_version("unit.obo.gz") or "unknown",
    }


@cache
def value_types() -> dict[str, tuple[str, ...]]:
    """PSI-MS accession -> the types its ``has_value_type`` relations name (``xsd:int``...),
    in the order the vocabulary lists them."""
    out: dict[str, tuple[str, ...]] = {}
    term = None
    with gzip.open(_vendored("psi-ms.obo.gz"), "rt", encoding="utf-8") as f:
        for line in f:
            if line.startswith("["):
                term = None
            elif line.startswith("id: "):
                term = line[4:].strip()
            elif term and line.startswith("relationship: has_value_type "):
                out[term] = (*out.get(term, ()), line.split()[2])
    return out
