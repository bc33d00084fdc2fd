"""Chromatograms across many runs, lazily over mzPeak archives or a Zarr export, with Dask.

Example (archives and Zarr stores may be mixed)::

    runs = open_runs(["a.mzpeak", "b.mzpeak", "export.zarr"])
    xics = xic(runs, [445.12, 524.26], ppm=10, rt=(10, 20))  # {run name: DataFrame}
    tics = tic(runs)
    frame = runs[0].points()  # a Dask dataframe of the decoded points
    mz = runs[-1].array("mz")  # a Dask array over the rectilinear Zarr array
    table = quantify(runs, "targets.csv")  # a MINT target list in every run
    image = ion_map(runs, mz_edges, rt_edges)  # xarray (run, rt, mz), one Dask chunk a run
"""

from __future__ import annotations

from .archive_run import ArchiveRun
from .chromatograms import base_peak, plot_tic, plot_xic, spectrum_stats, tic, xic
from .ion_map import ion_map, plot_ion_map
from .quantify import quantify
from .runs import open_runs
from .zarr_run import ZarrRun

__all__ = [
    "ArchiveRun",
    "ZarrRun",
    "base_peak",
    "ion_map",
    "open_runs",
    "plot_ion_map",
    "plot_tic",
    "plot_xic",
    "quantify",
    "spectrum_stats",
    "tic",
    "xic",
]
