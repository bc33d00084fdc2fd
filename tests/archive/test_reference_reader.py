"""The reference Python reader (HUPO-PSI/mzPeak, format document section 10) reads archives whose
data members were stitched from worker-written parts, spectrum by spectrum, as this package's
reader does: intensities exactly, m/z exactly but for the points null marking lets readers
rebuild (within 0.02 ppm, format document section 5.2). The reader lives outside the repository
(/work/interop/refvenv, never copied here); it is run as a separate program."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from mzpeak_dask import ConvertOptions, convert, open_archive

from ..conftest import DATA, INLINE
from ..helpers import SMALL_MZML

REFERENCE_PYTHON = Path("/work/interop/refvenv/bin/python")
RUNS = [
    SMALL_MZML,
    DATA / "depthcharge" / "TMT10-Trial-8.mzML",
    DATA / "HUPO-PSI_mzPeak" / "TOFsulfasMS4GHzDualMode+DADSpectra+UVSignal272-NoProfile.mzML",
]
READ = """
import sys, numpy as np
from mzpeak import MzPeakFile
r = MzPeakFile(sys.argv[1])
arrays = {}
for i in range(len(r)):
    s = r[i]
    arrays[f"mz{i}"] = np.asarray(s["m/z array"], dtype=np.float64)
    arrays[f"it{i}"] = np.asarray(s["intensity array"], dtype=np.float64)
np.savez(sys.argv[2], n=len(r), **arrays)
"""

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not REFERENCE_PYTHON.exists(), reason="the reference reader's venv"),
]


@pytest.mark.parametrize("layout", ["point", "chunked"])
@pytest.mark.parametrize("source", RUNS, ids=lambda p: p.name.split(".")[0][:20])
def test_the_reference_reader_reads_stitched_archives(tmp_path, source, layout) -> None:
    archive = tmp_path / "run.mzpeak"
    convert(source, archive, ConvertOptions(layout=layout, partition_items=9), cluster=INLINE)
    dump = tmp_path / "reference.npz"
    done = subprocess.run(
        [str(REFERENCE_PYTHON), "-c", READ, str(archive), str(dump)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = np.load(dump)
    with open_archive(archive) as ours:
        assert int(theirs["n"]) == len(ours) > 9  # several partitions
        for i in range(len(ours)):
            spectrum = ours[i]
            assert np.array_equal(theirs[f"it{i}"], spectrum.intensity), i
            mz = theirs[f"mz{i}"]
            assert len(mz) == len(spectrum.mz), i
            np.testing.assert_allclose(mz, spectrum.mz, rtol=2e-8, atol=0)
            if layout == "point":
                assert np.array_equal(mz, spectrum.mz), i
