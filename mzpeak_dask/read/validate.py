"""Checking an archive against the format's rules (``mzpeak-dask validate``).

Errors break a rule a reader relies on; warnings flag what the reference writer is known to do
differently from the specification (format doc sections 4 and 9), so its archives pass with
warnings only. Signal values are not decoded: the checks read footers, the index column, the
chunk bounds and the main axis of a point layout that declares it sorted, which keeps
validating a large archive cheap.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..archive import index as archive_index
from ..errors import ArchiveError, MzPeakDaskError
from ..format import cv
from ..format import vocabulary as V
from ..layouts import array_index as array_index_json
from ..readers.identifiers import DuplicateIds
from ..storage.urls import is_url, local_path
from ..tables.columns import parse_inflected
from .metadata import split_packed
from .parquet_checks import damaged, open_parquet
from .remote import RemoteArchiveStorage
from .storage import ArchiveStorage

ERROR, WARNING = "error", "warning"
_CURIE_KEYS = ("data_type", "array_type", "unit", "transform")


@dataclass(frozen=True)
class Problem:
    severity: str
    where: str
    message: str

    def __str__(self) -> str:  # where: "" for the archive as a whole (named beside)
        return f"{self.severity}: {self.where + ': ' if self.where else ''}{self.message}"


class _Checks:
    def __init__(self, path: Path | str):
        self.path = path
        self.problems: list[Problem] = []

    def error(self, where: str, message: str) -> None:
        self.problems.append(Problem(ERROR, where, message))

    def warn(self, where: str, message: str) -> None:
        self.problems.append(Problem(WARNING, where, message))

    def curie(self, where: str, accession: str | None) -> None:
        if not accession or ":" not in accession:
            return
        if accession.split(":", 1)[0] in ("MS", "UO") and not cv.is_known(accession):
            self.error(where, f"unknown CV term {accession}")


def validate(path: str | Path) -> list[Problem]:
    """Every problem found in the archive at ``path`` (empty when it is conformant)."""
    path = local_path(path)
    checks = _Checks(path if is_url(path) else Path(path))
    try:  # a remote archive's members are each read whole, once (validation reads them all)
        storage = RemoteArchiveStorage(str(path)) if is_url(path) else ArchiveStorage(path)
    except MzPeakDaskError as exc:
        checks.error("", str(exc).split(": ", 1)[-1])
        return checks.problems
    try:
        members = _index(storage, checks)
        counts: dict[str, int] = {}
        for (entity, kind), name in members.items():
            if kind == V.METADATA:
                with _member(name, checks):
                    counts[entity] = _metadata(storage, name, entity, checks)
        items: dict[tuple[str, str], np.ndarray] = {}
        for (entity, kind), name in members.items():
            if kind in (V.DATA_ARRAYS, V.PEAKS):
                with _member(name, checks):
                    found = _data(storage, name, entity, kind, counts.get(entity), checks)
                    if found is not None:
                        items[entity, kind] = found
        _peaks_only(members, items, checks)
    finally:
        storage.close()
    return checks.problems


@contextmanager
def _member(name: str, checks: _Checks) -> Iterator[None]:
    """A member too damaged to check further is one error, and the other members go on."""
    try:
        with damaged(name):
            yield
    except ArchiveError as exc:
        checks.error(name, str(exc).removeprefix(f"{name}: "))


def _entries(doc: object, checks: _Checks) -> list[dict]:
    """The index's file entries whose fields have the right types (errors for the rest)."""
    files = doc.get("files", []) if isinstance(doc, dict) else None
    if not isinstance(files, list):
        checks.error(V.INDEX_MEMBER, "not a JSON object with a 'files' list")
        return []
    good = []
    for entry in files:
        fields = (
            [entry.get(k) for k in ("name", "entity_type", "data_kind")]
            if isinstance(entry, dict)
            else [None]
        )
        if not isinstance(fields[0], str) or not all(isinstance(f, str | None) for f in fields):
            checks.error(V.INDEX_MEMBER, f"a malformed file entry: {json.dumps(entry)[:80]}")
            continue
        good.append(entry)
    return good


def _index(storage: ArchiveStorage, checks: _Checks) -> dict[tuple[str, str], str]:
    if V.INDEX_MEMBER not in storage:
        checks.error(V.INDEX_MEMBER, "missing")
        known = {n: k for k, n in V.MEMBER_NAMES.items()}
        return {known[n]: n for n in storage.names if n in known}
    try:
        doc = json.loads(storage.buffer(V.INDEX_MEMBER).to_pybytes())
    except ValueError as exc:
        checks.error(V.INDEX_MEMBER, f"not valid JSON ({exc})")
        return {}
    members = {}
    entries = _entries(doc, checks)
    problem = archive_index.conflict(
        [
            archive_index.IndexEntry(
                e["name"],
                archive_index.normalise_kind(e.get("entity_type")),
                archive_index.normalise_kind(e.get("data_kind")),
            )
            for e in entries
        ]
    )
    if problem:
        checks.error(V.INDEX_MEMBER, problem)
    for entry in entries:
        name, kind = entry.get("name"), entry.get("data_kind", "")
        entity = (entry.get("entity_type") or "").replace("_", " ")
        if "_" in kind:
            checks.warn(V.INDEX_MEMBER, f"data_kind {kind!r} should be spelled with a space")
        if name not in storage:
            checks.error(V.INDEX_MEMBER, f"lists {name}, which the archive does not contain")
            continue
        members[entity, kind.replace("_", " ")] = name
    listed = set(members.values()) | {V.INDEX_MEMBER}
    for name in storage.names:
        if name not in listed:
            checks.warn(name, "member not listed in mzpeak_index.json")
    metadata = doc.get("metadata", {}) if isinstance(doc, dict) else {}
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict):
        checks.error(V.INDEX_MEMBER, "metadata is not a JSON object")
    elif "version" not in metadata:
        checks.warn(V.INDEX_MEMBER, "metadata.version is missing (the reference writer omits it)")
    if not storage.is_directory and storage.names and storage.names[-1] != V.INDEX_MEMBER:
        checks.warn(V.INDEX_MEMBER, "not the last ZIP member")
    if (V.SPECTRUM, V.METADATA) not in members and (V.CHROMATOGRAM, V.METADATA) not in members:
        checks.error(V.INDEX_MEMBER, "lists no spectrum or chromatogram metadata member")
    return members


def _parquet(storage: ArchiveStorage, name: str, checks: _Checks) -> pq.ParquetFile | None:
    """The member, its footer checked against what its bytes can hold (an error if not)."""
    try:
        return open_parquet(storage.buffer(name), name)
    except ArchiveError as exc:
        checks.error(name, f"not a readable Parquet file ({str(exc).removeprefix(name + ': ')})")
        return None


def _page_index(pf: pq.ParquetFile, name: str, checks: _Checks) -> None:
    """Every column chunk has an offset index, and a column index unless its pages have no
    statistics to put in one (an all-null column: Parquet writers leave it out then). A row
    group of no rows (an entity whose items hold no point) has no page to index."""
    md = pf.metadata
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        if rg.num_rows == 0:
            continue
        for j in range(md.num_columns):
            column = rg.column(j)
            stats = column.statistics
            all_null = stats is not None and not stats.has_min_max and stats.num_values == 0
            if not column.has_offset_index or not (column.has_column_index or all_null):
                checks.error(name, f"no page index for {column.path_in_schema} (a MUST)")
                return


def _metadata(storage: ArchiveStorage, name: str, entity: str, checks: _Checks) -> int:
    pf = _parquet(storage, name, checks)
    if pf is None:
        return 0
    _page_index(pf, name, checks)
    tables = split_packed(pf.read(use_threads=False))
    main_name = "chromatogram" if entity == V.CHROMATOGRAM else "spectrum"
    main = tables.get(main_name)
    if main is None:
        checks.error(name, f"listed as {entity} metadata, but holds no {main_name} table")
        return 0
    for table_name, table in tables.items():
        _key_first_and_sorted(name, table_name, table, checks)
        for column in table.column_names:
            parsed = parse_inflected(column)
            if parsed is not None:
                checks.curie(f"{name}: {table_name}.{column}", parsed[0])
                checks.curie(f"{name}: {table_name}.{column}", parsed[1])
            elif ":" in column:
                checks.warn(name, f"{table_name}.{column}: a column name with a colon")
        if "parameters" in table.column_names:
            flat = pc.list_flatten(table.column("parameters"))
            for accession in set(pc.struct_field(flat, "accession").to_pylist()) - {None}:
                checks.curie(f"{name}: {table_name}.parameters", accession)
    index = main.column("index").to_numpy(zero_copy_only=False) if len(main) else np.zeros(0)
    if not np.array_equal(index, np.arange(len(index))):
        checks.error(name, f"{main_name}.index is not 0..n-1 in order")
    if "id" in main.column_names:
        _repeated_ids(name, main_name, main.column("id"), checks)
    kv = pf.metadata.metadata or {}
    context = V.CONTEXT[entity]
    declared = kv.get(f"{context}_count".encode())
    if declared is None:
        checks.error(name, f"no {context}_count key-value")
    elif int(declared) != len(main):
        checks.error(name, f"{context}_count says {int(declared)}, the table has {len(main)}")
    if f"{context}_data_point_count".encode() not in kv:
        checks.error(name, f"no {context}_data_point_count key-value")
    return len(main)


def _repeated_ids(member: str, table_name: str, ids: pa.ChunkedArray, checks: _Checks) -> None:
    """Ids must be unique in a run (mzML says so, and lookups by id find only the first)."""
    repeats = len(ids) - ids.null_count - pc.count_distinct(ids).as_py()
    if repeats:
        first = DuplicateIds()
        first.feed(str(i) for i in ids.to_pylist())
        checks.warn(
            member,
            f"{repeats:,} {table_name} rows repeat the id of an earlier one "
            f"(first {first.first!r})",
        )


def _key_first_and_sorted(member: str, table_name: str, table: pa.Table, checks: _Checks) -> None:
    key = table.column_names[0] if table.column_names else None
    if key not in ("index", "source_index"):
        checks.error(member, f"{table_name}: the first field is {key!r}, not its index")
        return
    values = table.column(key).to_numpy(zero_copy_only=False)
    if len(values) > 1 and np.any(np.diff(values.astype(np.int64)) < 0):
        checks.error(member, f"{table_name}.{key} is not sorted")


def _peaks_only(
    members: dict[tuple[str, str], str], items: dict[tuple[str, str], np.ndarray], checks: _Checks
) -> None:
    """Spectra whose signal is only in spectra_peaks: the specification keeps that member for
    peak lists beside signal in spectra_data (format doc sections 2.3 and 9 #9), and readers
    that read spectra_data (the reference readers) return such spectra without arrays."""
    peaks = items.get((V.SPECTRUM, V.PEAKS))
    if peaks is None or not len(peaks):
        return
    data = items.get((V.SPECTRUM, V.DATA_ARRAYS), np.zeros(0, peaks.dtype))
    alone = peaks[~np.isin(peaks, data)]
    if len(alone):
        checks.warn(
            members[V.SPECTRUM, V.PEAKS],
            f"{len(alone)} spectra (the first: index {int(alone[0])}) have signal only here, "
            "not in spectra_data: readers that read spectra_data return them without arrays "
            "(centroid-only spectra belong in spectra_data)",
        )


def _data(
    storage: ArchiveStorage, name: str, entity: str, kind: str, items: int | None, checks: _Checks
) -> np.ndarray | None:
    """Checks one data (or peaks) member; returns the items that have rows in it."""
    pf = _parquet(storage, name, checks)
    if pf is None:
        return None
    _page_index(pf, name, checks)
    context = V.CONTEXT[entity]
    kv = pf.metadata.metadata or {}
    raw = kv.get(f"{context}_array_index".encode())
    if raw is None:
        checks.error(name, f"listed as {entity} {kind}, but no {context}_array_index key-value")
        return None
    try:
        prefix, entries = array_index_json.loads(raw)
    except (ValueError, KeyError, TypeError) as exc:
        checks.error(name, f"unreadable array index ({exc})")
        return None
    schema = pf.schema_arrow
    if prefix not in schema.names:
        checks.error(name, f"the array index prefix {prefix!r} is not a top-level field")
        return None
    struct = schema.field(prefix).type
    children = [f.name for f in struct]
    index_name = f"{context}_index"
    if not children or children[0] != index_name:
        checks.error(name, f"the first field of {prefix} is not {index_name}")
    for entry in entries:
        if entry.column not in children:
            checks.error(name, f"array index path {entry.path} is not in the schema")
        for key in _CURIE_KEYS:
            checks.curie(f"{name}: {entry.path} {key}", getattr(entry, key))
    chunked = any(e.buffer_format == V.CHUNK_START for e in entries)
    ranked = [e for e in entries if e.sorting_rank is not None]
    if not ranked and chunked:
        checks.error(name, "no array has a sorting rank (the chunked layout needs one)")
    elif ranked and min(e.sorting_rank for e in ranked) != 0:
        rank = min(e.sorting_rank for e in ranked)
        checks.warn(name, f"the main axis has sorting rank {rank}, not 0")
    found = _index_column(pf, prefix, index_name, name, checks)
    if ranked and not chunked:
        main = min(ranked, key=lambda e: e.sorting_rank)
        _declared_order(pf, prefix, index_name, main.column, name, checks)
    points = _chunks(pf, prefix, entries, name, checks) if chunked else pf.metadata.num_rows
    declared = kv.get(f"{context}_data_point_count".encode())
    if declared is not None and points is not None and int(declared) != points:
        quirk = int(declared) == 0 or (chunked and int(declared) == pf.metadata.num_rows)
        (checks.warn if quirk else checks.error)(
            name,
            f"{context}_data_point_count says {int(declared)}, the data holds {points}"
            + (" (a known reference-writer quirk)" if quirk else ""),
        )
    return found


def _index_column(
    pf: pq.ParquetFile, prefix: str, index_name: str, name: str, checks: _Checks
) -> np.ndarray:
    """Checks the index column is sorted; returns its distinct values."""
    column = pf.read(columns=[f"{prefix}.{index_name}"], use_threads=False).column(0)
    values = pc.struct_field(column, index_name).to_numpy(zero_copy_only=False)
    if len(values) > 1 and np.any(np.diff(values.astype(np.int64)) < 0):
        checks.error(name, f"{prefix}.{index_name} is not sorted")
    return np.unique(values)


def _declared_order(
    pf: pq.ParquetFile, prefix: str, index_name: str, column: str, name: str, checks: _Checks
) -> None:
    """A main axis declared sorted (point layout) is ascending within every item (nulls
    aside): range queries of every reader rely on it."""
    paths = [f"{prefix}.{index_name}", f"{prefix}.{column}"]
    struct = pf.read(columns=paths, use_threads=False).column(0)
    index = pc.struct_field(struct, index_name)
    values = pc.struct_field(struct, column)
    keep = pc.is_valid(values)
    index = pc.filter(index, keep).to_numpy(zero_copy_only=False)
    values = pc.filter(values, keep).to_numpy(zero_copy_only=False)
    falls = (index[1:] == index[:-1]) & (values[1:] < values[:-1])
    if falls.any():
        items = np.unique(index[1:][falls])
        checks.error(
            name,
            f"{prefix}.{column} is declared sorted (sorting rank 0) but is not ascending in "
            f"{len(items)} items (the first: {int(items[0])})",
        )


def _chunks(
    pf: pq.ParquetFile, prefix: str, entries: list, name: str, checks: _Checks
) -> int | None:
    """Chunks ascending and non-overlapping per item; returns the number of points."""
    by_role = {e.buffer_format: e.column for e in entries if e.sorting_rank == 0}
    secondary = next((e.column for e in entries if e.buffer_format == V.CHUNK_SECONDARY), None)
    columns = [c for c in (by_role.get(V.CHUNK_START), by_role.get(V.CHUNK_END), secondary) if c]
    table = pf.read(
        columns=[f"{prefix}.{c}" for c in columns]
        + [f"{prefix}.{pf.schema_arrow.field(prefix).type[0].name}"],
        use_threads=False,
    )
    struct = table.column(0)
    fields = {f.name: pc.struct_field(struct, f.name) for f in struct.type}
    index = list(fields.values())[0].to_numpy(zero_copy_only=False).astype(np.int64)
    start = fields[by_role[V.CHUNK_START]].to_numpy(zero_copy_only=False)
    end = fields[by_role[V.CHUNK_END]].to_numpy(zero_copy_only=False)
    single = (end == 0) & (start != 0)
    if single.any():
        checks.warn(
            name, f"{int(single.sum())} chunks end at 0.0 (the reference writer's one-point chunks)"
        )
    end = np.where(single, start, end)
    if np.any(end < start):
        checks.error(name, "a chunk ends before it starts")
    same = index[1:] == index[:-1]
    if np.any(same & (start[1:] <= end[:-1])):
        checks.error(name, "chunks of one item overlap or are not ascending")
    if secondary is None:
        return None
    return int(pc.sum(pc.list_value_length(fields[secondary])).as_py() or 0)


def problems_json(problems: list[Problem]) -> list[dict]:
    return [asdict(p) for p in problems]
