"""A short human (and JSON) summary of an archive, for ``mzpeak-dask info``."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..format import vocabulary as V
from ..support.pathtext import human_size, plural
from .archive import MzPeakArchive
from .metadata import find_column
from .parquet_checks import damaged

_LOSSY = {
    V.NUMPRESS_LINEAR: "MS-Numpress linear",
    V.NUMPRESS_SLOF: "MS-Numpress SLOF",
    V.NUMPRESS_PIC: "MS-Numpress PIC",
}


def _layout(archive: MzPeakArchive) -> dict[str, Any]:
    signal = archive.signal(V.SPECTRUM)
    if signal is None:
        return {"layout": None, "arrays": [], "lossy": [], "encodings": {}}
    arrays, lossy = [], []
    for view in signal.views:
        code = V.DTYPE_CODE.get(view.data_type, view.data_type)
        arrays.append(f"{view.array_name} ({code}{', null-marked' if view.null_marked else ''})")
        for entry in view.columns.values():
            if entry.transform in _LOSSY:
                lossy.append(f"{entry.path}: {_LOSSY[entry.transform]}")
    encodings: dict[str, int] = {}
    if signal.chunked:
        column = signal.main.columns[V.CHUNK_ENCODING].path
        table = signal.file.read(columns=[column], use_threads=False)
        values = pc.struct_field(table.column(0), column.split(".", 1)[1])
        encodings = {str(k): int(v) for k, v in Counter(values.to_pylist()).items()}
        if encodings.get(V.NUMPRESS_LINEAR):
            lossy.append(
                f"{signal.main.columns[V.CHUNK_ENCODING].path}: MS-Numpress linear "
                f"({encodings[V.NUMPRESS_LINEAR]} chunks)"
            )
    return {
        "layout": "chunked" if signal.chunked else "point",
        "arrays": arrays,
        "lossy": sorted(set(lossy)),
        "encodings": encodings,
        "row_groups": signal.row_groups,
    }


def _spectrum_points(spectra: pa.Table, points_column: str | None) -> int | None:
    """Data points of every spectrum; a centroid spectrum kept only in ``spectra_peaks`` (no
    data points) counts its peaks, a profile spectrum's derived peak list does not count."""
    if not points_column:
        return None
    points = pc.fill_null(spectra.column(points_column), 0)
    total = int(pc.sum(points).as_py() or 0)
    peaks_column = find_column(spectra.column_names, V.NUMBER_OF_PEAKS)
    if peaks_column:
        peaks = pc.fill_null(spectra.column(peaks_column), 0)
        alone = pc.if_else(pc.equal(points, 0), peaks, pa.scalar(0, peaks.type))
        total += int(pc.sum(alone).as_py() or 0)
    return total


def _peaks(archive: MzPeakArchive) -> dict[str, int] | None:
    """What ``spectra_peaks`` holds: peak lists beside spectra that have signal in
    ``spectra_data`` (what the specification keeps it for), and spectra stored only there
    (centroid spectra written with ``--centroids peaks``, or by other writers)."""
    peaks = archive.signal(V.SPECTRUM, V.PEAKS)
    if peaks is None:
        return None
    data = archive.signal(V.SPECTRUM)
    in_peaks = peaks.item_indices()
    in_data = data.item_indices() if data is not None else np.zeros(0, in_peaks.dtype)
    alone = int(np.count_nonzero(~np.isin(in_peaks, in_data)))
    return {"peak_lists": len(in_peaks) - alone, "only_in_peaks": alone}


def summarize(archive: MzPeakArchive) -> dict[str, Any]:
    """The summary ``info`` prints; a malformed archive raises one ArchiveError line."""
    with damaged(archive.path):
        return _summary(archive)


def _summary(archive: MzPeakArchive) -> dict[str, Any]:
    spectra = archive.spectra
    level_column = find_column(spectra.column_names, V.MS_LEVEL)
    levels = Counter(spectra.column(level_column).to_pylist()) if level_column else Counter()
    points_column = find_column(spectra.column_names, V.NUMBER_OF_DATA_POINTS)
    times = spectra.column("time") if "time" in spectra.column_names else None
    meta = archive.file_metadata
    chromatogram_types = Counter()
    if archive.chromatogram_count:
        column = find_column(archive.chromatograms.column_names, V.CHROMATOGRAM_TYPE)
        if column:
            chromatogram_types = Counter(archive.chromatograms.column(column).to_pylist())
    return {
        "path": str(archive.path),
        "container": "directory" if archive.storage.is_directory else "zip",
        "format_version": archive.index_metadata.get("version"),
        "spectra": len(archive),
        "ms_levels": {str(k): v for k, v in sorted(levels.items(), key=lambda kv: str(kv[0]))},
        "points": _spectrum_points(spectra, points_column),
        "time_range": [pc.min(times).as_py(), pc.max(times).as_py()]
        if times is not None and len(times)
        else None,
        "chromatograms": archive.chromatogram_count,
        "chromatogram_types": {str(k): v for k, v in chromatogram_types.items()},
        "wavelength_spectra": archive.wavelength_spectrum_count,
        "peaks": _peaks(archive),
        **_layout(archive),
        "members": archive.members,
        "instruments": [_instrument(ic) for ic in meta.get("instrument_configuration_list", [])],
        "source_files": [
            sf.get("name") for sf in meta.get("file_description", {}).get("source_files", [])
        ],
    }


def _instrument(ic: dict[str, Any]) -> str:
    names = [
        p.get("name") if p.get("value") in (None, "") else f"{p.get('name')} {p.get('value')}"
        for p in ic.get("parameters", [])
    ]
    for component in ic.get("components", []):
        names += [p.get("name") for p in component.get("parameters", [])]
    return ", ".join(str(n) for n in names if n)


def format_summary(s: dict[str, Any]) -> str:
    levels = ", ".join(f"MS{k} {v}" for k, v in s["ms_levels"].items()) or "none"
    lines = [f"{s['path']}  ({s['container']}, mzPeak {s['format_version'] or 'unversioned'})"]
    points = plural(s["points"], "point") if s["points"] is not None else "points unknown"
    lines.append(f"spectra        {s['spectra']:,} ({levels}); {points}")
    if s["time_range"]:
        lines.append(f"retention time {s['time_range'][0]:.4g} - {s['time_range'][1]:.4g} min")
    if s.get("peaks"):
        peaks = s["peaks"]
        line = (
            f"spectra_peaks  {plural(peaks['peak_lists'], 'peak list')} beside spectra_data signal"
        )
        if peaks["only_in_peaks"]:
            line += (
                f"; {plural(peaks['only_in_peaks'], 'spectrum', 'spectra')} only here (readers "
                "that look in spectra_data, as the reference readers do, return them without "
                "arrays)"
            )
        lines.append(line)
    if s["wavelength_spectra"]:
        lines.append(f"UV spectra     {s['wavelength_spectra']:,}")
    kinds = ", ".join(
        f"{V.CHROMATOGRAM_TYPES.get(k, k)} {v}" for k, v in s["chromatogram_types"].items()
    )
    lines.append(f"chromatograms  {s['chromatograms']:,}" + (f" ({kinds})" if kinds else ""))
    layout = s["layout"] or "none"
    if s["encodings"]:
        layout += (
            " ("
            + ", ".join(f"{V.COMPRESSIONS.get(k, k)} {v}" for k, v in s["encodings"].items())
            + " chunks)"
        )
    lines.append(f"layout         {layout}; {plural(s.get('row_groups', 0), 'row group')}")
    lines.append(f"arrays         {'; '.join(s['arrays']) or 'none'}")
    if s["lossy"]:
        lines.append("lossy          " + "; ".join(s["lossy"]))
    elif any("null-marked" in a for a in s["arrays"]):
        lines.append(
            "lossy          no (non-zero points exact; m/z of null-marked zero-intensity "
            "points reconstructed from the spacing model)"
        )
    else:
        lines.append("lossy          no")
    for i, instrument in enumerate(s["instruments"]):
        lines.append(f"instrument {i:<3} {instrument}")
    if s["source_files"]:
        lines.append(f"source files   {', '.join(str(f) for f in s['source_files'])}")
    lines.append("members")
    width = max((len(n) for n in s["members"]), default=0)
    for name, size in s["members"].items():
        lines.append(f"  {name:<{width}}  {human_size(size):>10}")
    return "\n".join(lines)
