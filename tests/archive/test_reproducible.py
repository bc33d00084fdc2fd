"""The same run converted twice gives the same archive file, byte for byte: ZIP entries carry a
fixed date, not the time each member was written, so a repository can compare a reconversion
with the archive it holds by its digest alone."""

from __future__ import annotations

import hashlib
import time
import zipfile
from pathlib import Path

from mzpeak_dask import ConvertOptions, convert
from mzpeak_dask.archive.container import ZIP_EPOCH

from ..conftest import BUNDLED, INLINE

SMALL = BUNDLED / "small.mzML"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_member_is_dated_at_the_zip_epoch(tmp_path) -> None:
    output = tmp_path / "small.mzpeak"
    convert(SMALL, output, ConvertOptions(partition_items=7, peaks=True), cluster=INLINE)
    with zipfile.ZipFile(output) as z:
        entries = z.infolist()
    assert len(entries) >= 5
    assert {e.date_time for e in entries} == {ZIP_EPOCH}
    assert {e.external_attr >> 16 for e in entries} == {0o644}
    assert {e.compress_type for e in entries} == {zipfile.ZIP_STORED}


def test_a_reconversion_on_a_cluster_is_the_same_file(tmp_path, local_client) -> None:
    """In process, then on two workers more than a DOS time step (2 s) later: one digest."""
    first, second = tmp_path / "first.mzpeak", tmp_path / "second.mzpeak"
    options = ConvertOptions(partition_items=5)
    convert(SMALL, first, options, cluster=INLINE)
    time.sleep(2.1)
    convert(SMALL, second, options, client=local_client)
    assert _sha256(first) == _sha256(second)
