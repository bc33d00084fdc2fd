"""Encoding a partition builds many short-lived Python objects (metadata rows, params) and
frees them by reference counting; the cyclic garbage collector's passes over the parsed
records found nothing to free and cost a quarter of the encode. It is paused while a
partition is encoded and resumed after, as it was. What the process holds for good (its
modules, by its second partition) is frozen out of the collector's passes, once."""

from __future__ import annotations

import gc
import subprocess
import sys
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


FROZEN = """
import gc

base = gc.get_freeze_count()  # the interpreter freezes a few objects of its own

import sys, tempfile, weakref
from pathlib import Path
from mzpeak_dask import ConvertOptions, collector
from mzpeak_dask.encode import encode_partition
from mzpeak_dask.partition import plan_run

with tempfile.TemporaryDirectory() as staging:
    plan = plan_run(Path(sys.argv[1]), Path(staging), ConvertOptions())
part = plan.partitions[0]
if sys.argv[2] == "owned":
    collector.own_process()
frozen = []
for _ in range(3):
    out = encode_partition(part, plan.spec)
    frozen.append(gc.get_freeze_count() - base)
del out
gc.collect()
left = len(gc.get_objects())  # what a full pass still walks


class Node:
    pass


a, b = Node(), Node()
a.b, b.a = b, a  # a cycle made after the freeze is still collected
gone = weakref.ref(a)
del a, b
gc.collect()
print(*frozen, left, gone() is None)
"""


def _frozen(owned: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", FROZEN, str(RUN), owned],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout.split()


def test_the_second_partition_freezes_what_the_process_holds() -> None:
    first, second, third, left, collected = _frozen("owned")
    assert int(first) == 0  # nothing frozen while the first partition imports and caches
    assert int(second) > 20_000  # numpy, pyarrow, lxml and the package's modules
    assert third == second  # once
    assert int(left) < int(second) // 4  # a full pass no longer walks them
    assert collected == "True"


def test_a_process_not_of_the_package_keeps_its_collector_as_it_is() -> None:
    """A program calling convert() (not the command, not a worker the package started)."""
    *frozen, left, collected = _frozen("not owned")
    assert frozen == ["0", "0", "0"]
    assert int(left) > 20_000  # a full pass still walks everything, as the program expects
    assert collected == "True"


def test_the_workers_of_a_cluster_the_package_starts_are_its_own(local_client) -> None:
    owned = local_client.run(lambda: __import__("mzpeak_dask.collector").collector._owned)
    assert owned and all(owned.values())
