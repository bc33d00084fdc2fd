"""Archive comparisons: member digests, the same runs read from two archives, and the same
Parquet tables in two archives."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq


def member_digests(archive: Path) -> dict[str, str]:
    """SHA-256 of every member: two archives are equal when these are."""
    with zipfile.ZipFile(archive) as z:
        return {n: hashlib.sha256(z.read(n)).hexdigest() for n in z.namelist()}


def assert_same(local, remote, metadata: bool = True) -> None:
    """Two opened archives read the same spectra, chromatograms and (unless ``metadata`` is
    false) file metadata."""
    assert len(remote) == len(local) and remote.chromatogram_count == local.chromatogram_count
    assert remote.spectra.equals(local.spectra)
    for i in range(len(local)):
        a, b = local[i], remote[i]
        assert a.id == b.id and a.ms_level == b.ms_level and a.time == b.time
        assert a.arrays.keys() == b.arrays.keys()
        for name in a.arrays:
            np.testing.assert_array_equal(a.arrays[name], b.arrays[name])
    for i in range(local.chromatogram_count):
        a, b = local.read_chromatogram(i), remote.read_chromatogram(i)
        for name in a.arrays:
            np.testing.assert_array_equal(a.arrays[name], b.arrays[name])
    if metadata:
        assert remote.file_metadata == local.file_metadata


def tables(archive) -> dict[str, object]:
    """Every Parquet member's table without its schema metadata (the file-level metadata,
    which names the source's location, is the only difference allowed)."""
    with zipfile.ZipFile(archive) as z:
        out = {}
        for name in z.namelist():
            if name.endswith(".parquet"):
                with z.open(name) as f:
                    out[name] = pq.read_table(f).replace_schema_metadata(None)
        return out


def assert_same_members(local, remote) -> None:
    """Two archive files hold the same Parquet members with equal tables."""
    a, b = tables(local), tables(remote)
    assert a.keys() == b.keys() and a
    for name in a:
        assert a[name].equals(b[name]), name


def offsets_after(offsets: dict[str, int], counts: dict[str, int]) -> dict[str, int]:
    """The offsets of the partition after one written with ``offsets`` holding ``counts`` (its
    items per entity)."""
    return {**offsets, **{e: offsets.get(e, 0) + n for e, n in counts.items()}}
