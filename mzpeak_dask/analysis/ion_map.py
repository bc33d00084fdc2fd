"""Ion maps: runs as images of summed intensity over (retention time, m/z) bins, as an
``xarray.DataArray`` backed by a Dask array (one chunk per run).

Each run's bins are those of ``numpy.histogram2d(time, mz, bins=[rt_edges, mz_edges],
weights=intensity)``: a value ``x`` falls in bin ``i`` when ``edges[i] <= x < edges[i + 1]``,
the last bin also holding ``x == edges[-1]``, and values outside the edges in none. Pieces of a
run (blocks of spectra, batches of chunks) add their points into the rows of RT bins their
spectra fall in, so a run's memory is that of its image plus one piece, never the whole run;
only spectra inside the RT edges and chunks inside the m/z edges are read.
"""

from __future__ import annotations

import numpy as np
from dask import delayed

from ..errors import InputError, OptionsError
from .guarded import Failed, guarded
from .kernels import select_spectra
from .runs import Sources, as_runs, unique_names
from .source import Run


def bin_columns(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """1 + the bin of each value as ``numpy.histogramdd`` finds it; 0 below the edges and
    ``len(edges)`` above them or NaN. The last bin holds its upper edge: that edge is searched
    as the next float above it."""
    closed = np.append(edges[:-1], np.nextafter(edges[-1], np.inf))
    return np.searchsorted(closed, np.asarray(values, dtype=np.float64), side="right")


def bin_index(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The bin of each value as ``numpy.histogramdd`` finds it (-1: outside every bin)."""
    at = bin_columns(values, edges) - 1
    at[at == len(edges) - 1] = -1
    return at


def _piece(mz, intensity, row, rows: int, mz_edges) -> np.ndarray:
    """A piece's sums in ``rows`` rows of the image (``row``: each point's row, ``rows`` for
    none), counted in one pass over a table whose columns are :func:`bin_columns` (the
    bins, with one below and one above them) and whose last row holds the points outside
    every RT bin. NaN intensities are moved above the bins."""
    width = len(mz_edges) + 1
    column = bin_columns(mz, mz_edges)
    weights = np.asarray(intensity, dtype=np.float64)
    column[np.isnan(weights)] = width - 1
    cell = np.asarray(row, dtype=np.intp) * width
    cell += column
    sums = np.bincount(cell, weights=weights, minlength=(rows + 1) * width)
    return sums.reshape(rows + 1, width)[:rows, 1:-1]


def _block(reader, k: int, windows: tuple, rt_bins: np.ndarray, mz_edges) -> tuple:
    """Block ``k`` of a run's point reader as ``(first row, rows)`` of the image
    (``rt_bins``: the RT bin of each spectrum, -1 for none)."""
    bins = rt_bins[reader.positions(k)]
    bins = bins[bins >= 0]
    if not len(bins):
        return 0, np.zeros((0, len(mz_edges) - 1))
    first, rows = int(bins.min()), int(bins.max() - bins.min()) + 1
    row = np.where(rt_bins >= 0, rt_bins - first, rows)  # per spectrum; small
    mz, intensity, positions = reader.read(k, windows)
    return first, _piece(mz, intensity, row[np.asarray(positions, np.int64)], rows, mz_edges)


def _image(shape: tuple[int, int], *parts: tuple) -> np.ndarray:
    """A run's image from its pieces' rows (InputError naming the run if one failed)."""
    out = np.zeros(shape)
    for part in parts:
        if isinstance(part, Failed):
            raise InputError(part.message)
        first, rows = part
        out[first : first + len(rows)] += rows
    return out


def _edges(edges, name: str) -> np.ndarray:
    edges = np.asarray(edges, dtype=np.float64)
    if edges.ndim != 1 or len(edges) < 2 or not np.all(np.isfinite(edges)):
        raise OptionsError(f"{name}: give at least two finite bin edges")
    if np.any(np.diff(edges) < 0):
        raise OptionsError(f"{name}: bin edges must increase")
    return edges


def _run_image(run: Run, mz_edges, rt_edges, ms_level: int | None):
    import dask.array as da

    time = run.spectra["time"].to_numpy(dtype=np.float64)
    levels = run.spectra["ms_level"].to_numpy()
    ids = select_spectra(time, levels, (rt_edges[0], rt_edges[-1]), ms_level)
    windows = (mz_edges[:1], mz_edges[-1:])
    parts = []
    if len(ids):  # one reader over the run's spectra, a task per block; shared in the graph
        [reader] = run.point_readers(ids, [np.arange(len(ids))], [windows])
        shared = delayed(reader, pure=True), delayed(bin_index(time[ids], rt_edges), pure=True)
        task = delayed(guarded, pure=True)
        parts = [
            task(run.source, _block, shared[0], k, windows, shared[1], mz_edges)
            for k in range(reader.blocks)
        ]
    shape = (len(rt_edges) - 1, len(mz_edges) - 1)
    image = delayed(_image, pure=True)(shape, *parts)
    return da.from_delayed(image, shape=shape, dtype=np.float64)


def ion_map(sources: Sources, mz_edges, rt_edges, ms_level: int | None = 1):
    """Ion maps of ``sources`` (paths, URLs, or runs of :func:`open_runs`): an
    ``xarray.DataArray`` of dims ``(run, rt, mz)``, coordinates the run names and the bin
    centres (RT in minutes), backed by a Dask array with one chunk per run, not computed.
    Spectra of MS level ``ms_level`` (None: all). A run that cannot be read raises
    :class:`~mzpeak_dask.errors.InputError` naming it when the map is computed."""
    import dask.array as da
    import xarray as xr

    mz_edges, rt_edges = _edges(mz_edges, "m/z bins"), _edges(rt_edges, "RT bins")
    runs = as_runs(sources)
    if not runs:
        raise OptionsError("no runs to map")
    images = [_run_image(run, mz_edges, rt_edges, ms_level) for run in runs]
    return xr.DataArray(
        da.stack(images),
        dims=("run", "rt", "mz"),
        coords={
            "run": unique_names(runs),
            "rt": (rt_edges[:-1] + rt_edges[1:]) / 2,
            "mz": (mz_edges[:-1] + mz_edges[1:]) / 2,
        },
        name="intensity",
        attrs={"mz_edges": mz_edges, "rt_edges": rt_edges, "ms_level": ms_level},
    )


def plot_ion_map(image, path, *, title: str = "") -> None:
    """One run's map (a 2-D DataArray, computed) as a log-scaled image saved to ``path``."""
    try:
        from matplotlib.colors import LogNorm
        from matplotlib.figure import Figure
    except ImportError:
        raise OptionsError("--plot needs matplotlib (pip install 'mzpeak-dask[plot]')") from None
    values = np.asarray(image.values, dtype=np.float64)
    positive = values[values > 0]
    figure = Figure(figsize=(8, 6))
    axis = figure.subplots()
    mz, rt = image.attrs["mz_edges"], image.attrs["rt_edges"]
    norm = LogNorm(positive.min(), positive.max()) if len(positive) else None
    shown = axis.imshow(
        np.where(values > 0, values, np.nan),
        origin="lower",
        aspect="auto",
        extent=(mz[0], mz[-1], rt[0], rt[-1]),
        norm=norm,
        cmap="viridis",
        interpolation="nearest",
    )
    figure.colorbar(shown, ax=axis, label="summed intensity")
    axis.set_xlabel("m/z")
    axis.set_ylabel("retention time (min)")
    axis.set_title(title, fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


__all__ = ["bin_columns", "bin_index", "ion_map", "plot_ion_map"]
