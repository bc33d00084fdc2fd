"""fisher-py's own reading of a Thermo ``.raw`` file, the independent reader the Thermo tests
compare against: run as a separate process (``python -m tests.helpers.thermo_oracle RAW OUT``)
so that the test process never loads Mono, it writes every scan's arrays and header values to
``OUT`` (an ``.npz``) through fisher-py's public wrappers, none of mzpeak_dask's code."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np


def read(raw_path: str, out: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fisher_py import RawFile
        from fisher_py.data.business import ChromatogramTraceSettings, TraceType
        from fisher_py.raw_file_reader import RawFileReaderAdapter
    from fisher_py.data import Device

    access = RawFileReaderAdapter.file_factory(raw_path)
    access.select_instrument(Device.MS, 1)
    whole = RawFile(raw_path)
    arrays: dict[str, np.ndarray] = {}
    scans = []
    for n in range(whole.first_scan, whole.last_scan + 1):
        stats = access.get_scan_stats_for_scan_number(n)
        segmented = access.get_segmented_scan_from_scan_number(n, stats)
        arrays[f"{n}/mz"] = np.array(segmented.positions, dtype=np.float64)
        arrays[f"{n}/intensity"] = np.array(segmented.intensities, dtype=np.float64)
        masses, intensities, _, filter_string = whole.get_scan_from_scan_number(n)
        arrays[f"{n}/centroid_mz"] = np.asarray(masses, dtype=np.float64)
        arrays[f"{n}/centroid_intensity"] = np.asarray(intensities, dtype=np.float64)
        event = access.get_scan_event_for_scan_number(n)
        reaction = event.get_reaction(0) if int(event.ms_order.value) >= 2 else None
        scans.append(
            {
                "scan": n,
                "filter": filter_string,
                "time": access.retention_time_from_scan_number(n),
                "ms_level": int(event.ms_order.value),
                "positive": int(event.polarity.value) == 1,
                "centroid": bool(stats.is_centroid_scan),
                "tic": stats.tic,
                "base_peak_mz": stats.base_peak_mass,
                "base_peak_intensity": stats.base_peak_intensity,
                "precursor": reaction.precursor_mass if reaction else None,
                "isolation_width": reaction.isolation_width if reaction else None,
                "collision_energy": reaction.collision_energy if reaction else None,
                "activation": int(reaction.activation_type.value) if reaction else None,
            }
        )
    for key, trace in (("tic", TraceType.TIC), ("bpc", TraceType.BasePeak)):
        traces = access.get_chromatogram_data([ChromatogramTraceSettings(trace)], -1, -1)
        arrays[f"{key}/time"] = np.array(traces.positions_array[0], dtype=np.float64)
        arrays[f"{key}/intensity"] = np.array(traces.intensities_array[0], dtype=np.float64)
    data = access.get_instrument_data()
    header = {"model": data.model, "serial": data.serial_number, "scans": scans}
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(out, **arrays)


def fisher_reading(raw: Path, out: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """Run :func:`read` in a fresh process; ``(header, arrays)``."""
    subprocess.run(
        [sys.executable, "-m", "tests.helpers.thermo_oracle", str(raw), str(out)],
        check=True,
        timeout=300,
        cwd=Path(__file__).resolve().parents[2],
    )
    with np.load(out) as loaded:
        arrays = {k: loaded[k] for k in loaded.files}
    header = json.loads(arrays.pop("header").tobytes())
    return header, arrays


if __name__ == "__main__":
    read(sys.argv[1], sys.argv[2])
