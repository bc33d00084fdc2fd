"""Offline access to the PSI-MS and UO controlled vocabularies bundled with psims.

psims tries the network before its vendored ontology unless told not to, and a cluster node
often has no network: :func:`psi_ms` and :func:`unit_ontology` switch the remote lookup off
before anything loads. Both are loaded lazily (about a second: psims imports SQLAlchemy) and
cached per process; the conversion never needs them. What it needs — the vocabularies'
versions, the value types of PSI-MS terms, and the PSI-MS term a plain name stands for (an
mzXML instrument's values) — :func:`versions`, :func:`value_types` and :func:`psi_ms_term`
read straight from the same vendored OBO files (a test holds them to what psims says).
"""

from __future__ import annotations

import gzip
import importlib.util
import re
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


_QUOTED = re.compile(r'"([^"]*)"')


def _stanzas(name: str) -> list[dict[str, list[str]]]:
    """The ``[Term]`` and ``[Typedef]`` stanzas of a vendored OBO file as psims' parser collects
    them (the header ends at the first blank line; each line ``key: value``, both stripped)."""
    out: list[dict[str, list[str]]] = []
    current: dict[str, list[str]] | None = None
    in_header = True
    with gzip.open(_vendored(name), "rt", encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                in_header = False
            elif in_header:
                continue
            elif line in ("[Term]", "[Typedef]"):
                current = {}
                out.append(current)
            elif current is not None:
                key, _, value = line.partition(":")
                current.setdefault(key, []).append(value.strip())
    return out


@cache
def _psi_ms_names() -> tuple[dict[str, tuple[str, str]], ...]:
    """The tables psims' ``ControlledVocabulary.query`` looks a key up in, built as psims
    builds them (later entries win): by id, by name (not obsolete), lower-case name -> name,
    lower-case synonym, lower-case obsolete name; each giving ``(name, id)``."""
    ids, names, normalized, synonyms, obsolete = {}, {}, {}, {}, {}
    for stanza in _stanzas("psi-ms.obo.gz"):
        [accession] = stanza["id"]
        found = stanza.get("name", [])
        name = found[0] if len(found) == 1 else None  # psims keeps a list: never looked up
        term = (name, accession)
        ids[accession] = term
        gone = stanza.get("is_obsolete", [])
        if name is not None:
            normalized[name.lower()] = name
            if len(gone) > 1 or (gone and gone[0]):
                obsolete[name.lower()] = term
            else:
                names[name] = term
        for text in stanza.get("synonym", []):
            quoted = _QUOTED.search(text)
            synonyms[(quoted.group(1) if quoted else "").lower()] = term
    return ids, names, normalized, synonyms, obsolete


@cache
def psi_ms_below(*roots: str) -> dict[str, tuple[str, str]]:
    """Lower-case name -> ``(name, id)`` of every PSI-MS term below ``roots`` through is_a
    (transitively), read from the vendored OBO file without loading psims' vocabulary."""
    names: dict[str, str] = {}
    parents: dict[str, list[str]] = {}
    for stanza in _stanzas("psi-ms.obo.gz"):
        [accession] = stanza["id"]
        if stanza.get("name"):
            names[accession] = stanza["name"][-1]
        parents[accession] = [value.split()[0] for value in stanza.get("is_a", [])]

    def below(accession: str, seen: frozenset[str] = frozenset()) -> bool:
        return any(
            p in roots or (p not in seen and below(p, seen | {p}))
            for p in parents.get(accession, [])
        )

    return {names[a].lower(): (names[a], a) for a in names if below(a)}


def psi_ms_term(key: str) -> tuple[str, str] | None:
    """The ``(name, accession)`` of the PSI-MS term psims' ``psi_ms()[key]`` finds (an id, a
    name, the name in other case, a synonym, an id in lower case, an obsolete name), or None
    where it finds none; without loading psims (0.7 s of CPU, once for each mzXML run's
    survey: bench_mzxml's cold conversion)."""
    ids, names, normalized, synonyms, obsolete = _psi_ms_names()
    if key in ids or key in names:
        return ids.get(key) or names[key]
    lower = key.lower()
    name = normalized.get(lower)
    if name is not None and name in names:
        return names[name]
    for table in (synonyms, ids, obsolete):
        if lower in table:
            return table[lower]
    return None
