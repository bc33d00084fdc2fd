"""Quantification's figures against a naive loop over each target, on seeded synthetic pairs
with many ties (intensities from a few values, spectra sharing times)."""

from __future__ import annotations

import numpy as np
import pytest

from mzpeak_dask.analysis.quant_kernels import chromatogram_figures, point_figures


def _pairs(seed: int, targets: int = 30, spectra: int = 60):
    """(target, spectrum, m/z, intensity) pairs as a run's blocks give them: block after
    block, target by target, in m/z order within; and the spectra's times."""
    rng = np.random.default_rng(seed)
    time = np.round(rng.uniform(0, 5, spectra), 1)  # rounded: spectra share times
    mean = rng.uniform(200, 900, targets)
    rt_min = rng.uniform(0, 3, targets)
    rt_max = rt_min + 1.5
    blocks = []
    for first in range(0, spectra, 16):
        n = int(rng.integers(0, 400))
        target = np.sort(rng.integers(0, targets - 3, n))  # the last targets have no points
        spectrum = rng.integers(first, min(first + 16, spectra), n)
        mz = mean[target] * (1 + rng.uniform(-5e-6, 5e-6, n))
        intensity = rng.choice([1.0, 2.0, 3.5, 10.0], n)  # ties
        order = np.lexsort((mz, target))
        inside = (time[spectrum] >= rt_min[target]) & (time[spectrum] <= rt_max[target])
        order = order[inside[order]]  # match_points keeps the points in a target's window
        blocks.append((target[order], spectrum[order], mz[order], intensity[order]))
    target, spectrum, mz, intensity = (np.concatenate([b[k] for b in blocks]) for k in range(4))
    return targets, target, spectrum, mz, intensity, time, mean, rt_min, rt_max


def _naive(targets, target, spectrum, mz, intensity, time, mean, rt_min, rt_max):
    rows = []
    by_time = np.argsort(time, kind="stable")
    for k in range(targets):
        mine = np.flatnonzero(target == k)
        mine = mine[np.lexsort((mz[mine], spectrum[mine]))]  # run order
        v = intensity[mine]
        window = by_time[(time[by_time] >= rt_min[k]) & (time[by_time] <= rt_max[k])]
        xic = np.array([intensity[mine][spectrum[mine] == j].sum() for j in window])
        row = {"peak_area": v.sum(), "peak_n_datapoints": len(v), "spectra": len(window)}
        row["area"] = float(np.trapezoid(xic, time[window])) if len(window) > 1 else 0.0
        if len(v):
            top = int(np.argmax(v))  # the first in run order
            ppm = (mz[mine] - mean[k]) / (mean[k] * 1e-6)
            row |= {"peak_max": v.max(), "peak_min": v.min(), "peak_mean": v.mean()}
            row |= {"peak_median": np.median(v), "peak_mass_diff_50pc": np.median(ppm)}
            row["peak_rt_of_max"] = time[spectrum[mine][top]]
            apex = int(np.argmax(xic))  # the first in time order
            row |= {"apex_time": time[window][apex], "apex_intensity": xic[apex]}
        else:
            nan = np.nan
            row |= dict.fromkeys(("peak_max", "peak_min", "peak_mean", "peak_median"), nan)
            row |= {"peak_mass_diff_50pc": nan, "peak_rt_of_max": nan, "apex_time": nan}
            row["apex_intensity"] = 0.0 if len(window) else nan
        rows.append(row)
    return rows


EXACT = ("peak_n_datapoints", "peak_max", "peak_min", "peak_rt_of_max", "spectra", "apex_time")


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_figures_match_a_naive_loop(seed) -> None:
    targets, target, spectrum, mz, intensity, time, mean, rt_min, rt_max = _pairs(seed)
    got = point_figures(targets, target, spectrum, mz, intensity, time, mean)
    got |= chromatogram_figures(targets, target, spectrum, intensity, time, rt_min, rt_max)
    want = _naive(targets, target, spectrum, mz, intensity, time, mean, rt_min, rt_max)
    assert np.isnan(got["peak_max"][-3:]).all() and (got["peak_n_datapoints"] > 0).sum() > 20
    for name in want[0]:
        expected = np.array([row[name] for row in want], dtype=float)
        if name in EXACT:
            np.testing.assert_array_equal(got[name], expected, err_msg=name)
        else:
            np.testing.assert_allclose(got[name], expected, rtol=1e-12, err_msg=name)


def test_figures_of_no_pairs() -> None:
    none, time = np.zeros(0, np.int64), np.array([1.0, 2.0])
    got = point_figures(2, none, none, none * 1.0, none * 1.0, time, np.array([300.0, 400.0]))
    assert got["peak_area"].tolist() == [0, 0] and np.isnan(got["peak_median"]).all()
    got = chromatogram_figures(
        2, none, none, none * 1.0, time, np.array([0.0, 3]), np.array([3.0, 4])
    )
    assert got["spectra"].tolist() == [2, 0] and got["area"].tolist() == [0, 0]
    assert got["apex_intensity"][0] == 0 and np.isnan(got["apex_intensity"][1])
