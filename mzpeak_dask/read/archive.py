"""``open_archive``: any mzPeak archive (ZIP or directory, ours or another writer's).

The metadata members are loaded whole (they are small); signal is read per item, with
row-group pruning, through :class:`~mzpeak_dask.read.signal.SignalReader`.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cached_property, partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..archive import index as archive_index
from ..errors import ArchiveError
from ..format import vocabulary as V
from ..storage.filecache import FileCache
from ..storage.urls import is_url, local_path
from ..tables.auxiliary import decode_auxiliary
from .entity import EntityTables, value
from .parquet_checks import damaged, open_parquet
from .remote import RemoteArchiveStorage
from .signal import SignalReader
from .spectrum import Chromatogram, Spectrum
from .storage import ArchiveStorage

_COUNT_KEYS = ("_count", "_data_point_count", "_array_index")
_MAIN_TABLE = {
    V.SPECTRUM: "spectrum",
    V.CHROMATOGRAM: "chromatogram",
    V.WAVELENGTH_SPECTRUM: "spectrum",
}


class MzPeakArchive:
    """A read-only view of one mzPeak archive."""

    def __init__(
        self, path: str | Path, storage_options: dict[str, Any] | None = None, *, check: bool = True
    ):
        """``check=False`` leaves out reading every member's footer and the spectrum metadata
        at opening (for an archive already opened checked, read again by other threads or
        processes: a member is then read when it is first used)."""
        path = local_path(path)
        if is_url(path):  # read by byte ranges: the central directory, footers, row groups
            self.path: Path | str = str(path)
            self.storage: ArchiveStorage = RemoteArchiveStorage(self.path, storage_options)
        else:
            self.path = Path(path)
            self.storage = ArchiveStorage(self.path)
        try:
            self._open(check)
            if self.storage.remote:  # the spectra's data footer belongs to opening
                self.signal(V.SPECTRUM)
        except BaseException:
            self.storage.close()
            raise

    def _open(self, check: bool) -> None:
        entries, self.index_metadata = self.storage.index()
        for e in entries:  # a reader must not pass a lost member off as an empty one
            if e.name not in self.storage:
                raise ArchiveError(
                    f"{self.path}: {V.INDEX_MEMBER} lists {e.name}, which the archive "
                    "does not contain"
                )
        problem = archive_index.conflict(entries)
        if problem:
            raise ArchiveError(f"{self.path}: {V.INDEX_MEMBER} {problem}")
        self._members = {(e.entity_type, e.data_kind): e.name for e in entries}
        if (
            self.member(V.SPECTRUM, V.METADATA) is None
            and self.member(V.CHROMATOGRAM, V.METADATA) is None
        ):
            raise ArchiveError(f"{self.path}: no spectrum or chromatogram metadata member")
        self._tables: dict[str, EntityTables] = {}
        self._signals: dict[tuple[str, str], SignalReader | None] = {}
        if not check:
            return
        self._check_kinds()
        spectra = self.tables_of(V.SPECTRUM)
        with damaged(self.path):
            index = spectra.main.column("index").to_numpy() if len(spectra) else []
            if len(index) and not np.array_equal(index, np.arange(len(index))):
                raise ArchiveError(f"{self.path}: spectrum indices are not 0..n-1")

    def _check_kinds(self) -> None:
        """Every member the index gives a role holds what that role needs (a metadata member
        its entity's table, a data member its array index), read from the footers: an index
        with two members' kinds swapped must not open as an empty run."""
        roles = [role for role in V.MEMBER_NAMES if role in self._members]
        for entity, kind in sorted(roles, key=lambda role: role[1] != V.METADATA):
            if self.member(entity, kind) is None:
                continue
            if kind == V.METADATA:
                self.tables_of(entity)
            else:
                self.signal(entity, kind)

    # -- members and file-level metadata ---------------------------------------------------------
    def member(self, entity: str, kind: str) -> str | None:
        name = self._members.get((entity, kind))
        if name is None and not self._members:
            name = V.MEMBER_NAMES.get((entity, kind))
        return name if name is not None and name in self.storage else None

    @property
    def members(self) -> dict[str, int]:
        return {name: self.storage.size(name) for name in self.storage.names}

    def tables_of(self, entity: str) -> EntityTables:
        """The metadata tables of ``spectrum``, ``chromatogram`` or ``wavelength spectrum``."""
        if entity not in self._tables:
            member = self.member(entity, V.METADATA)
            buffer = None if member is None else self.storage.buffer(member)
            tables = EntityTables(buffer, _MAIN_TABLE[entity], f"{self.path}: {member}")
            if buffer is not None and _MAIN_TABLE[entity] not in tables.tables:
                raise ArchiveError(
                    f"{self.path}: {member} is listed as {entity} metadata but holds no "
                    f"{_MAIN_TABLE[entity]} table"
                )
            tables.window_bounds = entity == V.SPECTRUM and self._window_bounds
            self._tables[entity] = tables
        return self._tables[entity]

    def signal(self, entity: str, kind: str = V.DATA_ARRAYS) -> SignalReader | None:
        """The reader of the entity's data (or ``peaks``) member; None when there is none."""
        if (entity, kind) not in self._signals:
            member = self.member(entity, kind)
            reader = None
            if member is not None:
                buffer = self.storage.source(member)
                shared = not (self.storage.remote or self.storage.is_directory)
                reader = SignalReader(
                    buffer,
                    V.CONTEXT[entity],
                    f"{self.path}: {member}",
                    f"{entity} {kind}",
                    partial(self.storage.release, member),
                    data_footer(str(self.path), member) if shared else None,
                )
                reader.release()  # the footer's pages: it has been parsed
            self._signals[entity, kind] = reader
        return self._signals[entity, kind]

    @cached_property
    def file_metadata(self) -> dict[str, Any]:
        """The file-level metadata (file description, instruments, software, ...) as dicts."""
        footer = self.tables_of(V.SPECTRUM).footer or self.tables_of(V.CHROMATOGRAM).footer
        with damaged(self.path):
            out = {k: v for k, v in footer.items() if not k.endswith(_COUNT_KEYS)}
            for key, item in self.index_metadata.items():
                out.setdefault(key, item)
        return out

    @cached_property
    def _window_bounds(self) -> bool:
        """Whether isolation windows hold absolute bounds in their offset columns: the
        reference prototype writer does that (format doc 9 #10); the specification and this
        package write offsets."""
        member = self.member(V.SPECTRUM, V.METADATA) or self.member(V.CHROMATOGRAM, V.METADATA)
        if member is None:
            return False
        kv = open_parquet(self.storage.buffer(member), f"{self.path}: {member}").metadata.metadata
        return b"mzpeak_prototyping" in (kv or {}).get(b"software_list", b"")

    # -- spectra ----------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.tables_of(V.SPECTRUM))

    def __getitem__(self, i: int | slice) -> Spectrum | list[Spectrum]:
        if isinstance(i, slice):
            return [self.read_spectrum(k) for k in range(*i.indices(len(self)))]
        return self.read_spectrum(i)

    def __iter__(self) -> Iterator[Spectrum]:
        for i in range(len(self)):
            yield self.read_spectrum(i)

    def get_by_id(self, native_id: str) -> Spectrum:
        return self.read_spectrum(self.tables_of(V.SPECTRUM).position(native_id))

    def read_spectrum(self, i: int) -> Spectrum:
        return self._read_item(V.SPECTRUM, _checked(i, len(self), "spectrum"))

    def read_peaks(self, i: int) -> Spectrum | None:
        """The centroid view of spectrum ``i`` from ``spectra_peaks.parquet`` (a peak list
        stored beside its profile, or a centroid spectrum stored there), or None."""
        i = _checked(i, len(self), "spectrum")
        peaks = self.signal(V.SPECTRUM, V.PEAKS)
        arrays = peaks.read(i, None) if peaks is not None else {}
        with damaged(self.path):
            return self._spectrum(V.SPECTRUM, i, arrays) if arrays else None

    def _read_item(self, entity: str, i: int) -> Spectrum:
        with damaged(self.path):
            return self._read_arrays(entity, i)

    def _read_arrays(self, entity: str, i: int) -> Spectrum:
        tables = self.tables_of(entity)
        model = tables.models[i]
        signal = self.signal(entity)
        arrays = signal.read(i, np.asarray(model) if model else None) if signal else {}
        if not arrays and entity == V.SPECTRUM:  # centroids stored as peaks only (2026 spec)
            peaks = self.signal(V.SPECTRUM, V.PEAKS)
            arrays = peaks.read(i, None) if peaks is not None else {}
        for aux in tables.auxiliary(i):
            decoded = decode_auxiliary(aux)
            arrays.setdefault(decoded.name, decoded.values)
        return self._spectrum(entity, i, arrays)

    def _spectrum(self, entity: str, i: int, arrays: dict[str, np.ndarray]) -> Spectrum:
        tables = self.tables_of(entity)
        level = tables.ms_levels[i]
        return Spectrum(
            index=i,
            id=tables.ids[i],
            ms_level=None if level is None else int(level),
            time=tables.times[i],
            arrays=arrays,
            tables=tables,
            polarity=tables.polarities[i],
            representation=tables.representations[i],
        )

    # -- tables -----------------------------------------------------------------------------------
    def table(self, name: str, *, entity: str = V.SPECTRUM, pandas: bool = False) -> Any:
        """A metadata table (``spectrum``, ``scan``, ``precursor``, ``selected_ion``,
        ``chromatogram``, ...) as Arrow, or pandas with ``pandas=True``."""
        tables = self.tables_of(entity).tables
        if name not in tables:
            raise KeyError(f"no {name} table for {entity}s in {self.path}")
        return tables[name].to_pandas() if pandas else tables[name]

    @property
    def spectra(self) -> pa.Table:
        return self.tables_of(V.SPECTRUM).main

    @property
    def chromatograms(self) -> pa.Table:
        return self.tables_of(V.CHROMATOGRAM).main

    @property
    def chromatogram_count(self) -> int:
        return len(self.tables_of(V.CHROMATOGRAM))

    def read_chromatogram(self, i: int) -> Chromatogram:
        tables = self.tables_of(V.CHROMATOGRAM)
        i = _checked(i, len(tables), "chromatogram")
        signal = self.signal(V.CHROMATOGRAM)
        arrays = signal.read(i, None) if signal else {}
        with damaged(self.path):
            row = tables.row(i)
            return Chromatogram(
                index=i,
                id=tables.ids[i],
                arrays=arrays,
                params=tables.params(i),
                chromatogram_type=value(row, V.CHROMATOGRAM_TYPE),
            )

    @property
    def wavelength_spectrum_count(self) -> int:
        return len(self.tables_of(V.WAVELENGTH_SPECTRUM))

    def read_wavelength_spectrum(self, i: int) -> Spectrum:
        n = self.wavelength_spectrum_count
        return self._read_item(V.WAVELENGTH_SPECTRUM, _checked(i, n, "UV spectrum"))

    # -- lifecycle --------------------------------------------------------------------------------
    def close(self) -> None:
        """Release the archive (arrays already read stay valid)."""
        self._signals.clear()
        self.storage.close()

    def __enter__(self) -> MzPeakArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MzPeakArchive({str(self.path)!r}, spectra={len(self)})"


def _checked(i: int, n: int, what: str) -> int:
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError(f"{what} index {i} out of range (0..{n - 1})")
    return i


def open_archive(path: str | Path, storage_options: dict[str, Any] | None = None) -> MzPeakArchive:
    """Open an mzPeak archive (a ``.mzpeak`` ZIP or an unpacked directory): a path, or a URL
    (``s3://``, ``gs://``, ``az://``, ``https://``, ``file://``) read by byte ranges, with
    ``storage_options`` for its filesystem (default: those of ``--storage-options``)."""
    return MzPeakArchive(path, storage_options)


def _data_footer(path: str, member: str) -> pq.FileMetaData:
    storage = ArchiveStorage(path)
    try:
        return open_parquet(storage.buffer(member), f"{path}: {member}").metadata
    finally:
        storage.close()


# The parsed footer of a data member of a ZIP archive, shared by the threads of a process that
# open the archive (each has its own archive, see below): the footer of the 1 GB run's chunked
# data member takes 35 MB parsed (6,304 row groups), and the XIC command opens it in 3 threads.
data_footer = FileCache(_data_footer, 8)

# An archive opened once per thread (its signal readers cache a row group, so threads do not
# share them) for the Dask tasks that read it block after block; reopened when it changes.
cached_archive = FileCache(open_archive, 8, per_thread=True, close=MzPeakArchive.close)


__all__ = ["MzPeakArchive", "cached_archive", "open_archive"]
