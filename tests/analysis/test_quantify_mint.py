"""quantify gives MINT's (PyPI ``ms-mint``) numbers: ``peak_area``, ``peak_max`` and
``peak_n_datapoints`` of a real profile run and a MINT target list, from archives (both
layouts) and the Zarr export, against MINT's own integration (``process_ms1``).

MINT's reader rounds m/z to float32 and truncates intensities to integers before it
integrates (``ms_mint.io.set_dtypes``): points within that rounding of a window's edge fall on
the other side of it (about one target in ten of this run, by one or a few points; see
docs/guide/analysis.md). Its integration is given the run's points as the mzML stores them
(float64, read by pyteomics), so both compute the same definition on the same points.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mzpeak_dask.analysis import quantify

from ..export.builds import METABO
from .test_chromatograms import source_spectra
from .test_quantify import runs_of

pytest.importorskip("ms_mint", reason="ms-mint (the bench extra) is not installed")

pytestmark = pytest.mark.slow


def mint_targets(count: int = 40, seed: int = 11) -> pd.DataFrame:
    """A MINT target list on strong peaks of the run: 5 to 20 ppm, windows of 0.2 to 1 min
    (some in seconds), thresholds of 1 and above."""
    rng = np.random.default_rng(seed)
    ms1 = [s for s in source_spectra(METABO) if s[1] == 1]
    rows = []
    for k in range(count):
        time, _, mz, intensity = ms1[rng.integers(len(ms1))]
        peak = float(mz[np.argsort(intensity)[-1 - k % 7]])
        half = rng.uniform(0.1, 0.5)
        threshold = float(rng.choice([1.0, 1.0, 1e4]))
        row = [f"m{k}", peak, float(rng.choice([5, 10, 20])), time - half, time + half, "min"]
        rows.append([*row, threshold])
    for row in rows[::4]:
        row[3:6] = [row[3] * 60, row[4] * 60, "s"]
    columns = ["peak_label", "mz_mean", "mz_width", "rt_min", "rt_max", "rt_unit"]
    return pd.DataFrame(rows, columns=[*columns, "intensity_threshold"])


def mint_numbers(targets: pd.DataFrame) -> pd.DataFrame:
    """MINT's integration over the MS1 points of the mzML as stored (seconds, float64)."""
    from ms_mint.processing import process_ms1
    from ms_mint.targets import standardize_targets

    frames = [
        pd.DataFrame({"scan_time": time * 60, "mz": mz, "intensity": intensity})
        for time, level, mz, intensity in source_spectra(METABO)
        if level == 1
    ]
    points = pd.concat(frames, ignore_index=True)
    return process_ms1(points, standardize_targets(targets.copy())).set_index("peak_label")


def test_the_numbers_of_mint(exported) -> None:
    targets = mint_targets()
    want = mint_numbers(targets).loc[targets["peak_label"]]
    assert (want["peak_n_datapoints"] > 0).sum() >= 30
    runs = runs_of(exported, METABO)
    result = quantify(runs, targets)
    for run in runs:
        got = result[result["run"] == run.source].set_index("peak_label")
        assert got["peak_n_datapoints"].tolist() == want["peak_n_datapoints"].tolist(), run
        for column in ("peak_area", "peak_max"):
            np.testing.assert_allclose(
                got[column].fillna(0).to_numpy(float),
                want[column].fillna(0).to_numpy(float),
                rtol=1e-12,
                atol=0,
                err_msg=f"{run.source}: {column}",
            )
