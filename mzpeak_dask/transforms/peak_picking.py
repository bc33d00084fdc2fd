"""Centroiding a profile spectrum into a peak list (for ``spectra_peaks.parquet``, option
``--peaks``), vectorised.

A peak is a local maximum of the intensity (strictly above its left neighbour, at least its
right one, above zero). Its m/z is the vertex of the parabola through the maximum and its two
neighbours (exact for unevenly spaced points), and its intensity the parabola's height there;
where the three points do not open downwards the maximum point itself is kept. This is the
usual three-point apex estimate; it does not model noise, so every local maximum is reported.
"""

from __future__ import annotations

import numpy as np

__all__ = ["pick_peaks"]


def pick_peaks(mz: np.ndarray, intensity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(peak m/z, peak intensity)`` of a profile spectrum, float64, ascending in m/z."""
    x = np.asarray(mz, dtype=np.float64)
    y = np.asarray(intensity, dtype=np.float64)
    if x.size < 3:
        keep = y > 0
        return x[keep], y[keep]
    apex = np.flatnonzero((y[1:-1] > y[:-2]) & (y[1:-1] >= y[2:]) & (y[1:-1] > 0)) + 1
    x0, x1, x2 = x[apex - 1], x[apex], x[apex + 1]
    y0, y1, y2 = y[apex - 1], y[apex], y[apex + 1]
    # the parabola y = a (x - x1)^2 + b (x - x1) + y1 through the three points
    d0, d2 = x0 - x1, x2 - x1
    with np.errstate(divide="ignore", invalid="ignore"):
        denominator = d0 * d2 * (d0 - d2)
        a = (d2 * (y0 - y1) - d0 * (y2 - y1)) / denominator
        b = (d0 * d0 * (y2 - y1) - d2 * d2 * (y0 - y1)) / denominator
        shift = -b / (2 * a)
    good = (a < 0) & np.isfinite(shift) & (shift >= d0) & (shift <= d2)
    peak_mz = np.where(good, x1 + shift, x1)
    peak_intensity = np.where(good, y1 + a * shift * shift + b * shift, y1)
    return peak_mz, peak_intensity
