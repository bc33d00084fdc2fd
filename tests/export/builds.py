"""Archives and a Zarr export shared by tests/export and tests/analysis (the session fixture
``exported`` of tests/conftest.py builds them once)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mzpeak_dask import ConvertOptions, convert
from mzpeak_dask.export.zarr import to_zarr

from ..conftest import DATA, INLINE

REFERENCE = DATA / "HUPO-PSI_mzPeak"
CHUNK_POINTS = 20_000  # small Zarr chunks: the shared runs are cut into several
SMALL = DATA / "mzdata" / "small.mzML"
METABO = DATA / "openms" / "FeatureFinderMetaboIdent_1_input.mzML"
# archive stem -> (source mzML, conversion options); converted in-process (no Dask)
CONVERSIONS: dict[str, tuple[Path, dict]] = {
    "small.chunked": (SMALL, {"layout": "chunked"}),
    "small.point": (SMALL, {"layout": "point"}),
    "small.peaks": (SMALL, {"layout": "point", "centroids": "peaks"}),  # MS2 in the peaks member
    "metabo.point": (METABO, {"layout": "point", "row_group_points": 2048}),
    "metabo.chunked": (METABO, {"layout": "chunked"}),
    "three.chunked": (DATA / "mzdata" / "three_test_scans.mzML", {"layout": "chunked"}),
    "maldi.point": (DATA / "openms" / "peakpicker_tutorial_2.mzML", {"layout": "point"}),
    # ion-mobility arrays beside m/z and intensity
    "mobility.chunked": (DATA / "openms" / "FileConverter_31_output.mzML", {"layout": "chunked"}),
    # an S/N array some spectra lack, and an empty spectrum
    "kitchen.point": (DATA / "openms" / "MzMLFile_1.mzML", {"layout": "point"}),
}
COPIED = {  # the reference writer's archives
    "ref.chunked": REFERENCE / "small.chunked.mzpeak",
    "ref.point": REFERENCE / "small.mzpeak",
    # Numpress-linear m/z and SLOF intensities (lossy; no plain secondary list to size chunks)
    "ref.numpress": REFERENCE / "small.numpress.mzpeak",
}
SOURCES = {  # archive stem -> the mzML it holds (exactly: the lossy Numpress archive is left out)
    **{name: source for name, (source, _) in CONVERSIONS.items()},
    "ref.chunked": SMALL,
    "ref.point": SMALL,
}


@dataclass
class Built:
    archives: dict[str, Path]  # archive stem -> archive path
    store: Path  # Zarr store with one run group per archive (exported inline)


def built(root: Path) -> Built:
    """Convert and copy the archives into ``root`` and export them all (in-process)."""
    archives = {}
    for name, (source, options) in CONVERSIONS.items():
        archives[name] = root / f"{name}.mzpeak"
        convert(source, archives[name], ConvertOptions(**options), cluster=INLINE)
    for name, path in COPIED.items():
        archives[name] = root / f"{name}.mzpeak"
        archives[name].write_bytes(path.read_bytes())
    store = root / "runs.zarr"
    to_zarr(list(archives.values()), store, cluster=INLINE, chunk_points=CHUNK_POINTS)
    return Built(archives, store)
