"""A process that encodes partitions keeps the C heap blocks a partition frees and reuses them
for the next: encoding the same partition again takes almost no fresh pages from the kernel
(thousands of minor page faults for this partition without it, each a zero-filled page).
Measured in a fresh process, whose heap no earlier test has set."""

from __future__ import annotations

import subprocess
import sys

import pytest

from .conftest import DATA

RUN = DATA / "openms" / "FeatureFinderMetaboIdent_1_input.mzML"

PLANNED = """
import resource, sys, tempfile
from pathlib import Path
from mzpeak_dask import ConvertOptions
from mzpeak_dask.encode.partition import encode_partition
from mzpeak_dask.encode.plan import plan_run
from mzpeak_dask.readers import SPECTRA

def first_spectra(path):
    \"\"\"The plan of the run at ``path`` and its first partition of spectra.\"\"\"
    with tempfile.TemporaryDirectory() as staging:
        plan = plan_run(Path(path), Path(staging), ConvertOptions())
    return plan, next(p for p in plan.partitions if p.items.kind == SPECTRA)
"""  # what both scripts below start with

SCRIPT = (
    PLANNED
    + """
from mzpeak_dask.support.heap import keep_freed_blocks

plan, part = first_spectra(sys.argv[1])
faults = []
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    out = encode_partition(part, plan.spec)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(sum(out.points.values()), faults[-1], keep_freed_blocks())
"""
)


@pytest.mark.slow  # a fresh process encodes a partition of a real run three times
def test_encoding_again_reuses_the_freed_heap() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(RUN)], capture_output=True, text=True, check=True
    )
    points, faults, kept = done.stdout.split()
    assert int(points) > 100_000  # a real partition: about 2 MB of points per array
    if sys.platform.startswith("linux") and kept == "True":
        assert int(faults) < 300, faults
