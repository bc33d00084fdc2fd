"""A worker reads thousands of partitions one after the other: reading one must not leave its
input text waiting for a full garbage collection (pyteomics' readers sit in reference cycles,
which Python frees only when a generation-2 collection happens to run)."""

from __future__ import annotations

import gc
import io
from pathlib import Path

import pytest

from mzpeak_dask.encode.plan import plan_run
from mzpeak_dask.options import ConvertOptions
from mzpeak_dask.readers import FORMATS

from ..conftest import DATA


def _open_buffers_left(path: Path, staging: Path) -> int:
    """Bytes in in-memory files that reading one partition leaves open (they would stay in
    memory until the next full collection closes them)."""
    plan = plan_run(path, staging, ConvertOptions())
    part = plan.partitions[0]
    gc.collect()
    gc.disable()
    try:
        before = {id(o) for o in gc.get_objects() if isinstance(o, io.BytesIO | io.StringIO)}
        records = list(FORMATS[part.format].read(part.path, part.items, part.hints))
        assert records
        del records
        return sum(
            len(o.getvalue())
            for o in gc.get_objects()
            if isinstance(o, io.BytesIO | io.StringIO) and id(o) not in before and not o.closed
        )
    finally:
        gc.enable()


@pytest.mark.parametrize(
    "name", ["mzdata/small.mzML", "mzdata/small.mzMLb", "depthcharge/TMT10-Trial-8.mgf"]
)
def test_partition_read_frees_its_input_text(name: str, tmp_path: Path) -> None:
    assert _open_buffers_left(DATA / name, tmp_path) == 0
