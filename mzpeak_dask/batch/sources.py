"""What a batch converts: every MS file under a folder, or the paths of a manifest, and where
each archive goes (the source tree mirrored under the output folder).

Inputs are absolute paths, whatever was typed (``repo`` or ``/data/repo``), since the batch's
state knows each input by its path; a manifest that names one file several times (``a.mzML``,
``./x/../a.mzML``, ``/data/a.mzML``) lists it once."""

from __future__ import annotations

import csv
import os
from pathlib import Path, PurePosixPath

from ..convert import archive_names
from ..errors import InputError, OutputError
from ..storage.inputs import is_vendor_folder
from ..storage.origins import SUFFIX as ORIGIN
from ..storage.urls import join, object_identity

SUFFIXES = (".mzml", ".mzxml", ".mgf", ".mzmlb")
SUFFIXES += (".raw",)  # Thermo (the thermo extra reads them)
WRAPPERS = ("", ".gz", ".bz2")


def is_ms_file(path: Path) -> bool:
    name = path.name.lower()
    return any(name.endswith(s + w) for s in SUFFIXES for w in WRAPPERS)


def _inputs_named(files: list[str]) -> list[str]:
    """The MS files among ``files``, and those whose origin marker alone is there: an input
    in storage read where it lies is staged as that note (:mod:`..storage.origins`)."""
    names = {f.removesuffix(ORIGIN) for f in files}
    return sorted(n for n in names if is_ms_file(Path(n)))


def discover(source: Path) -> tuple[Path, list[Path]]:
    """``(root, inputs)``: a folder's MS files (recursively, sorted), or a manifest's paths;
    absolute, each file once."""
    if source.is_dir():
        root = source.resolve()
        found = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            vendor = [d for d in dirs if is_vendor_folder(os.path.join(folder, d))]
            dirs[:] = [d for d in dirs if d not in vendor]  # a .d is one input, not walked
            found += sorted(Path(folder) / f for f in [*_inputs_named(files), *vendor])
        return root, found
    if source.is_file():
        inputs = list(dict.fromkeys(read_manifest(source)))
        return _common_root(inputs, source.parent.resolve()), inputs
    raise InputError(f"{source}: no such folder or manifest")


def read_manifest(path: Path) -> list[Path]:
    """One path per line, or CSV/TSV with a ``path`` column; relative paths are relative to
    the manifest's folder; blank lines and ``#`` comments are skipped. Paths come back
    resolved (absolute, without links or ``..``); bytes that are not UTF-8 are kept."""
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    return [(path.parent / v).resolve() for v in manifest_entries(text, path)]


def manifest_entries(text: str, name: object) -> list[str]:
    """The paths or URLs of a manifest's text (blank lines and ``#`` comments left out): one
    a line, or the ``path`` column of a CSV/TSV, whose header may be that column alone."""
    lines = [line for line in text.splitlines() if line.strip() and line.lstrip()[0] != "#"]
    if not lines:
        return []
    first = lines[0]
    delimiter = "\t" if "\t" in first else "," if "," in first else None
    if delimiter is None and first.strip().strip('"') == "path":
        delimiter = ","  # a CSV of one column: its header names it
    if delimiter is None:
        return [line.strip() for line in lines]
    reader = csv.DictReader(lines, delimiter=delimiter)
    if "path" not in (reader.fieldnames or []):
        raise InputError(f"{name}: a CSV/TSV manifest needs a 'path' column")
    return [row["path"].strip() for row in reader if row.get("path")]


def _common_root(inputs: list[Path], default: Path) -> Path:
    if not inputs:
        return default
    try:
        return Path(os.path.commonpath([p.parent for p in inputs]))
    except ValueError:  # different drives
        return default


def outputs_for(root: Path, inputs: list[Path], output_dir: Path) -> list[tuple[Path, Path]]:
    """``(input, archive)`` pairs mirroring the tree under ``output_dir``."""
    by_folder: dict[Path, list[Path]] = {}
    for p in inputs:
        by_folder.setdefault(p.parent, []).append(p)
    names = {}
    for files in by_folder.values():
        names.update(zip(files, archive_names(files), strict=True))
    pairs = []
    for p in inputs:
        try:
            relative = p.parent.relative_to(root)
        except ValueError:
            relative = Path(*p.parent.parts[1:])
        pairs.append((p, output_dir / relative / names[p]))
    return pairs


def refuse_overwriting_objects(
    inputs: list[tuple[str, str]], output: str, reports: list[str]
) -> None:
    """Refuse a batch of URLs before any work when one of the objects it would write under
    the prefix ``output`` (each input's archive, mirrored as :func:`outputs_for` names it,
    and the ``reports``) is one of its inputs, however spelt
    (:func:`~..storage.urls.object_identity`). ``inputs``: ``(url, path under the
    prefix)``. An output prefix holding the inputs is fine: only equal keys are refused."""
    root, out = PurePosixPath("/in"), PurePosixPath("/out")
    local = [Path(root / relative) for _, relative in inputs]
    archives = outputs_for(Path(root), local, Path(out))
    written = [join(output, str(PurePosixPath(a).relative_to(out))) for _, a in archives]
    by_identity = {object_identity(url): url for url, _ in reversed(inputs)}
    for url in [*written, *(join(output, name) for name in reports)]:
        same = by_identity.get(object_identity(url))
        if same is not None:
            raise OutputError(f"{url}: is the input {same}; choose another output")
