"""Checking an archive as a batch records it: validation, the SHA-256 of every member, and a
TIC thumbnail for the report (plain data, so it may travel back from the worker that made it:
see :func:`mzpeak_dask.parallel.tasks.finish`).
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from ..format import vocabulary as V
from ..tables.file_metadata import file_sha256
from .archive import open_archive
from .metadata import find_column
from .validate import ERROR, Problem, validate


def member_digests(archive: Path) -> dict[str, str]:
    """SHA-256 of every member of an archive (ZIP or folder)."""
    if archive.is_dir():
        return {p.name: file_sha256(p) for p in sorted(archive.iterdir()) if p.is_file()}
    digests = {}
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            digest = hashlib.sha256()
            with z.open(info) as f:
                while block := f.read(1 << 22):
                    digest.update(block)
            digests[info.filename] = digest.hexdigest()
    return digests


def _tic(tables: Any, points: int = 120) -> list[list[float]]:
    """A downsampled total-ion chromatogram of the MS1 spectra (from the metadata)."""
    times, levels = tables.times, tables.ms_levels
    tic = tables.values_of(V.TOTAL_ION_CURRENT)
    pairs = [
        (t, v)
        for t, level, v in zip(times, levels, tic, strict=True)
        if t is not None and v is not None and level in (1, None)
    ]
    if len(pairs) > points:
        step = len(pairs) / points
        pairs = [pairs[int(k * step)] for k in range(points)]
    return [[float(t), float(v)] for t, v in pairs]


def _describe(archive: Any, tables: Any) -> dict[str, Any]:
    levels = Counter(level for level in tables.ms_levels if level is not None)
    times = [t for t in tables.times if t is not None]
    spectra = archive.spectra
    low = find_column(spectra.column_names, V.LOWEST_OBSERVED_MZ)
    high = find_column(spectra.column_names, V.HIGHEST_OBSERVED_MZ)
    instruments = [
        ", ".join(str(p.get("name")) for p in ic.get("parameters", []))
        for ic in archive.file_metadata.get("instrument_configuration_list", [])
    ]
    return {
        "instrument": "; ".join(dict.fromkeys(i for i in instruments if i)),
        "spectra": len(tables),
        "ms1_spectra": levels.get(1, 0),
        "ms2_spectra": levels.get(2, 0),
        "msn_spectra": sum(v for k, v in levels.items() if k >= 3),
        "ms_levels": json.dumps({str(k): v for k, v in sorted(levels.items())}),
        "rt_min": min(times) if times else None,
        "rt_max": max(times) if times else None,
        "mz_min": pc.min(spectra.column(low)).as_py() if low else None,
        "mz_max": pc.max(spectra.column(high)).as_py() if high else None,
    }


def describe(path: Path) -> dict[str, Any]:
    """What a catalog says of an archive beyond its record: instrument, spectra per MS level,
    retention time and m/z ranges (from the metadata; plain data)."""
    with open_archive(path) as archive:
        return _describe(archive, archive.tables_of(V.SPECTRUM))


def inspect_output(output: str, named: str | None = None) -> dict[str, Any]:
    """``{"errors": [...]}`` for an archive that fails validation, else its warnings, member
    digests, TIC thumbnail and catalog description (:func:`describe`; plain data: it may
    travel back from a worker). ``named``: the name problems give the archive (the output it
    is renamed to, when it is checked in its staging folder)."""
    path = Path(output)
    problems = [_named(p, output, named) for p in validate(path)] if named else validate(path)
    errors = [str(p) for p in problems if p.severity == ERROR]
    if errors:
        return {"errors": errors}
    with open_archive(path) as archive:  # opened once for the thumbnail and the description
        tables = archive.tables_of(V.SPECTRUM)
        tic, description = _tic(tables), _describe(archive, tables)
    return {
        "errors": [],
        "warnings": [str(p) for p in problems],
        "members": member_digests(path),
        "tic": tic,
        "catalog": description,
    }


def _named(problem: Problem, path: str, named: str) -> Problem:
    """``problem`` placed in the archive called ``named`` rather than at ``path``."""
    where = problem.where
    if where == path or where.startswith(path + "/") or where.startswith(path + ":"):
        where = named + where[len(path) :]
    return replace(problem, where=where)


__all__ = ["describe", "inspect_output", "member_digests"]
