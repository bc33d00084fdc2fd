"""The independent reader the tests compare against: pyteomics, used directly on the source file
(none of mzpeak_dask's readers), normalised into plain dicts."""

from __future__ import annotations

import bz2
import gzip
import io
import shutil
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from lxml import etree
from pyteomics import mgf, mzml, mzmlb, mzxml

WAVELENGTH = "wavelength array"


def plain_copy(path: Path, tmp: Path) -> Path:
    """A decompressed copy of a .gz/.bz2 input (pyteomics needs a seekable plain file)."""
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(path.suffix)
    if opener is None:
        return path
    target = tmp / path.with_suffix("").name
    with opener(path, "rb") as src, open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return target


def _minutes(value: Any) -> float | None:
    if value is None:
        return None
    unit = getattr(value, "unit_info", None)
    return float(value) / 60.0 if unit == "second" else float(value)


def _mzml_precursors(info: dict) -> list[dict]:
    out = []
    for prec in (info.get("precursorList") or {}).get("precursor", []):
        ions = (prec.get("selectedIonList") or {}).get("selectedIon", [{}])
        ion = ions[0] if ions else {}
        window = prec.get("isolationWindow") or {}
        activation = prec.get("activation") or {}
        out.append(
            {
                "mz": ion.get("selected ion m/z"),
                "charge": ion.get("charge state"),
                "target": window.get("isolation window target m/z"),
                "lower": window.get("isolation window lower offset"),
                "upper": window.get("isolation window upper offset"),
                "activation": {
                    getattr(k, "accession", None) or str(k)
                    for k in activation
                    if k != "collision energy"
                },
                "collision_energy": activation.get("collision energy"),
            }
        )
    return out


def _arrays(info: dict) -> dict[str, np.ndarray]:
    return {str(k): np.asarray(v) for k, v in info.items() if isinstance(v, np.ndarray)}


def _mzml_spectrum(info: dict) -> dict[str, Any]:
    scans = (info.get("scanList") or {}).get("scan", [{}])
    polarity = 1 if "positive scan" in info else -1 if "negative scan" in info else None
    representation = (
        "MS:1000127"
        if "centroid spectrum" in info
        else "MS:1000128"
        if "profile spectrum" in info
        else None
    )
    return {
        "id": info["id"],
        "ms_level": info.get("ms level"),
        "time": _minutes(scans[0].get("scan start time")) if scans else None,
        "polarity": polarity,
        "representation": representation,
        "precursors": _mzml_precursors(info),
        "arrays": _arrays(info),
        "profile": representation == "MS:1000128",
    }


def _mzxml_spectrum(info: dict) -> dict[str, Any]:
    precursors = []
    for p in info.get("precursorMz", []):
        half = p.get("windowWideness") / 2 if p.get("windowWideness") is not None else None
        precursors.append(
            {
                "mz": p["precursorMz"],
                "charge": p.get("precursorCharge"),
                "target": p["precursorMz"],
                "lower": half,
                "upper": half,
                "activation": None,
                "collision_energy": info.get("collisionEnergy"),
            }
        )
    centroided = info.get("centroided")
    return {
        "id": str(info["num"]),
        "ms_level": info.get("msLevel"),
        "time": info.get("retentionTime"),
        "polarity": {"+": 1, "-": -1}.get(info.get("polarity")),
        "representation": None
        if centroided is None
        else ("MS:1000127" if centroided else "MS:1000128"),
        "precursors": precursors,
        "arrays": _arrays(info),
        "profile": centroided is False,
    }


def _mgf_spectrum(info: dict, position: int) -> dict[str, Any]:
    p = info["params"]
    charges = p.get("charge") or [None]
    pepmass = p.get("pepmass") or (None,)
    arrays = {k: np.asarray(v) for k, v in info.items() if k in ("m/z array", "intensity array")}
    rt = p.get("rtinseconds")
    return {
        "id": f"index={position}",
        "ms_level": int(p["mslevel"]) if "mslevel" in p else 2,
        "time": None if rt is None else float(rt) / 60.0,
        "polarity": None,
        "representation": "MS:1000127",
        "precursors": [
            {
                "mz": pepmass[0],
                "charge": int(charges[0]) if charges[0] else None,
                "target": None,
                "lower": None,
                "upper": None,
                "activation": None,
                "collision_energy": None,
            }
        ]
        if pepmass[0] is not None
        else [],
        "arrays": arrays,
        "profile": False,
    }


def spectra(path: Path, tmp: Path) -> list[dict[str, Any]]:
    """Every spectrum of ``path`` as decoded by pyteomics, in file order."""
    name = path.name
    if name.endswith(".mzMLb"):
        with mzmlb.MzMLb(str(path)) as reader:
            return [_mzml_spectrum(s) for s in reader]
    if name.endswith(".mzXML"):
        with mzxml.MzXML(str(path)) as reader:
            return [_mzxml_spectrum(s) for s in reader]
    if name.endswith(".mgf"):
        # the header's params too: a file-level CHARGE is the charge of spectra without one
        with mgf.MGF(str(path), use_header=True) as reader:
            return [_mgf_spectrum(s, i) for i, s in enumerate(reader)]
    # use_index=False: document order, duplicate ids included (the index keys by id)
    with mzml.MzML(str(plain_copy(path, tmp)), use_index=False) as reader:
        return [_mzml_spectrum(s) for s in reader]


_PER_MINUTE = {"UO:0000010": 60.0, "UO:0000028": 60_000.0}  # second, millisecond
_NS = "{http://psi.hupo.org/ms/mzml}"


def _time_units(xml: bytes) -> list[str | None]:
    """The unit of each chromatogram's time array, in document order (pyteomics drops it)."""
    units: list[str | None] = []
    for _, element in etree.iterparse(io.BytesIO(xml), tag=f"{_NS}chromatogram"):
        found = element.find(f".//{_NS}cvParam[@accession='MS:1000595']")
        units.append(None if found is None else found.get("unitAccession"))
        element.clear()
    return units


def chromatograms(path: Path, tmp: Path) -> list[dict[str, Any]]:
    """Chromatograms as pyteomics decodes them, time arrays in minutes (as mzPeak stores
    them): a time array in seconds is divided by 60 (in milliseconds, by 60,000)."""
    name = path.name
    if name.endswith(".mzMLb"):
        reader = mzmlb.MzMLb(str(path))
        with h5py.File(path) as f:
            xml = f["mzML"][:].tobytes()
    elif name.endswith((".mzML", ".mzML.gz", ".mzML.bz2")):
        plain = plain_copy(path, tmp)
        reader = mzml.MzML(str(plain), use_index=False)
        xml = plain.read_bytes()
    else:
        return []
    out = []
    with reader:
        for c, unit in zip(reader.iterfind("chromatogram"), _time_units(xml), strict=True):
            arrays = _arrays(c)
            if unit in _PER_MINUTE and "time array" in arrays:
                per_minute = _PER_MINUTE[unit]
                arrays["time array"] = arrays["time array"].astype(np.float64) / per_minute
            out.append({"id": c["id"], "arrays": arrays})
    return out
