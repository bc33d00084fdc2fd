"""``mzpeak_index.json``: the member list every reader starts from (format doc section 1.2).

Written last, with ``metadata.version`` and ``cv_list`` (the specification requires them; the
reference writer leaves ``metadata`` empty) and a copy of the file-level metadata. Reading is
tolerant: ``data_arrays`` and ``data arrays`` mean the same, unknown keys are ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..format import cv
from ..format import vocabulary as V


@dataclass(frozen=True, slots=True)
class IndexEntry:
    name: str
    entity_type: str
    data_kind: str


def normalise_kind(value: str | None) -> str:
    text = (value or "").lower().replace("_", " ").strip()
    return text or V.OTHER


def entries_for(names: list[str]) -> list[IndexEntry]:
    """Index entries for the members written, in the order written."""
    by_name = {name: key for key, name in V.MEMBER_NAMES.items()}
    return [IndexEntry(n, *by_name[n]) for n in names if n in by_name]


def build(members: list[str], file_metadata: dict[str, Any]) -> bytes:
    versions = cv.versions()
    cv_list = [dict(entry, version=versions.get(entry["id"])) for entry in V.CV_LIST]
    doc = {
        "files": [
            {"name": e.name, "entity_type": e.entity_type, "data_kind": e.data_kind}
            for e in entries_for(members)
        ],
        "metadata": {"version": V.FORMAT_VERSION, "cv_list": cv_list, **file_metadata},
    }
    return json.dumps(doc, indent=2).encode("utf-8")


def parse(data: bytes | str) -> tuple[list[IndexEntry], dict[str, Any]]:
    """The entries and metadata; ValueError for JSON that is not an index (wrong types)."""
    doc = json.loads(data)
    files = doc.get("files", []) if isinstance(doc, dict) else None
    if not isinstance(files, list) or not all(isinstance(f, dict) for f in files):
        raise ValueError("not an object with a 'files' list of objects")
    for f in files:
        for key in ("name", "entity_type", "data_kind"):
            if not isinstance(f.get(key, ""), str | None):
                raise ValueError(f"a file entry's {key} is not a string")
    entries = [
        IndexEntry(
            f["name"], normalise_kind(f.get("entity_type")), normalise_kind(f.get("data_kind"))
        )
        for f in files
        if f.get("name")
    ]
    metadata = doc.get("metadata") or {}
    return entries, metadata if isinstance(metadata, dict) else {}


def conflict(entries: list[IndexEntry]) -> str | None:
    """What makes an index ambiguous, or None: a member listed twice (even with the same
    kind), or two members claiming one of the format's roles (say two spectrum metadata
    members). A reader that let the last entry win would read a damaged archive as empty."""
    names: set[str] = set()
    roles: dict[tuple[str, str], str] = {}
    for e in entries:
        if e.name in names:
            return f"lists {e.name} twice"
        names.add(e.name)
        role = (e.entity_type, e.data_kind)
        if role in V.MEMBER_NAMES:
            if role in roles:
                return f"lists both {roles[role]} and {e.name} as {e.entity_type} {e.data_kind}"
            roles[role] = e.name
    return None
