"""Encoding a partition builds many short-lived Python objects (metadata rows, params) and
frees them by reference counting; the cyclic garbage collector's passes over the parsed
records found nothing to free and cost a quarter of the encode. It is paused while a
partition is encoded and resumed after, as it was."""

from __future__ import annotations

import gc
import tempfile
from pathlib import Path

from mzpeak_dask import ConvertOptions
from mzpeak_dask.contracts import EncodedPartition
from mzpeak_dask.encode import encode_partition
from mzpeak_dask.partition import plan_run
from mzpeak_dask.readers import SPECTRA

from .conftest import DATA

RUN = DATA / "openms" / "FeatureFinderMetaboIdent_1_input.mzML"


def _spectra_partition():
    with tempfile.TemporaryDirectory() as staging:
        plan = plan_run(RUN, Path(staging), ConvertOptions())
    part = next(p for p in plan.partitions if p.items.kind == SPECTRA)
    return part, plan.spec


def _collections_during_encode() -> tuple[int, EncodedPartition]:
    part, spec = _spectra_partition()
    seen = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(count)
    try:
        out = encode_partition(part, spec)
    finally:
        gc.callbacks.remove(count)
    return len(seen), out


def test_no_collector_pass_while_a_partition_is_encoded() -> None:
    assert gc.isenabled()
    passes, out = _collections_during_encode()
    assert out.counts and sum(out.points.values()) > 100_000  # real work was done
    assert passes <= 1  # at most one left pending on entry (about a hundred without the pause)
    assert gc.isenabled()  # resumed


def test_a_paused_collector_stays_paused() -> None:
    gc.disable()
    try:
        _collections_during_encode()
        assert not gc.isenabled()
    finally:
        gc.enable()
