"""The pyteomics path for MGF, kept as the tests' reference: what the MGF reader produced when
it read through :mod:`pyteomics.mgf` (the spectra of a file as plain, comparable values), and
the same plain values of the records our reader yields.

A file-level ``CHARGE`` (before the first ``BEGIN IONS``) is the charge of every spectrum that
has none of its own, as pyteomics' ``use_header`` applies it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from pyteomics import mgf

from mzpeak_dask.format import vocabulary as V
from mzpeak_dask.model.records import SpectrumRecord
from mzpeak_dask.readers import ItemRange
from mzpeak_dask.readers.mgf import MGFFormat

_HANDLED = {"title", "pepmass", "charge", "rtinseconds", "mslevel"}


def _param(name: str | None, accession: str | None, value: Any, unit: str | None = None):
    if isinstance(value, float):
        value = float(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        value = int(value)
    return (name, accession, value, unit)


def _term(accession: str, value: Any = None, unit: str | None = None):
    return _param(V.TERM_NAMES[accession], accession, value, unit)


def _expected(info: dict, position: int, file_charge: list[int] | None) -> dict[str, Any]:
    p = info["params"]
    level = int(p.get("mslevel", 2))
    params = [
        _term(V.MS_LEVEL, level),
        _term(V.MS1_SPECTRUM if level <= 1 else V.MSN_SPECTRUM),
        _term(V.CENTROID_SPECTRUM),
    ]
    if "title" in p:
        params.append(_term(V.SPECTRUM_TITLE, str(p["title"])))
    params += [_param(k.upper(), None, v) for k, v in p.items() if k not in _HANDLED]
    scan = []
    if p.get("rtinseconds") is not None:
        scan.append(_term(V.SCAN_START_TIME, float(p["rtinseconds"]), V.UNIT_SECOND))
    precursors = []
    pepmass = p.get("pepmass")
    if pepmass and pepmass[0] is not None:
        charges = [int(c) for c in (p.get("charge") or file_charge or [])]
        ion = [_term(V.SELECTED_ION_MZ, float(pepmass[0]), V.UNIT_MZ)]
        if charges:
            ion.append(_term(V.CHARGE_STATE, charges[0]))
        ion += [_term(V.POSSIBLE_CHARGE_STATE, c) for c in charges[1:]]
        if len(pepmass) > 1 and pepmass[1] is not None:
            ion.append(_term(V.PEAK_INTENSITY, float(pepmass[1]), V.UNIT_DETECTOR_COUNTS))
        precursors.append(ion)
    arrays = {
        "m/z array": np.asarray(info["m/z array"], dtype=np.float64),
        "intensity array": np.asarray(info["intensity array"], dtype=np.float64),
    }
    charges = info.get("charge array")
    if charges is not None and np.ma.count(charges):
        arrays["charge array"] = np.ma.filled(charges, 0).astype(np.int64)
    return {
        "id": f"index={position}",
        "params": params,
        "scan": scan,
        "precursors": precursors,
        "arrays": arrays,
    }


def pyteomics_spectra(path: Path) -> list[dict[str, Any]]:
    """Every spectrum of ``path`` as the pyteomics path read it."""
    with mgf.MGF(str(path), use_header=True) as reader:
        charge = reader.header.get("charge")
    with mgf.MGF(str(path), use_header=False, read_charges=True) as reader:
        return [_expected(info, k, charge) for k, info in enumerate(reader)]


def plain(record: SpectrumRecord) -> dict[str, Any]:
    """A record of our reader as the same plain values."""
    [scan] = record.scans
    return {
        "id": record.id,
        "params": [_param(p.name, p.accession, p.value, p.unit) for p in record.params],
        "scan": [_param(p.name, p.accession, p.value, p.unit) for p in scan.params],
        "precursors": [
            [_param(p.name, p.accession, p.value, p.unit) for p in ion.params]
            for prec in record.precursors
            for ion in prec.selected_ions
        ],
        "arrays": {a.name: a.values for a in record.arrays},
    }


def our_spectra(path: Path, cuts: list[int] | None = None) -> list[dict[str, Any]]:
    """Every spectrum of ``path`` as our reader yields it, read in the partitions that start
    at the spectra ``cuts`` (default: one partition)."""
    survey = MGFFormat.survey(str(path))
    offsets = survey.spectrum_offsets
    stops = [0, *(cuts or []), survey.spectrum_count]
    out = []
    for a, b in zip(stops, stops[1:], strict=False):
        items = ItemRange("spectrum", a, b, int(offsets[a]), int(offsets[b]))
        out += [plain(r) for r in MGFFormat.read(str(path), items, survey.hints)]
    return out


def assert_same(expected: list[dict], got: list[dict], where: str) -> None:
    """Spectrum by spectrum: ids, params, scan, precursors exact; arrays exact, same dtype."""
    assert len(got) == len(expected), f"{where}: {len(got)} spectra, not {len(expected)}"
    for e, g in zip(expected, got, strict=True):
        at = f"{where} {e['id']}"
        for key in ("id", "params", "scan", "precursors"):
            assert g[key] == e[key], f"{at}: {key}: {g[key]!r} != {e[key]!r}"
        assert g["arrays"].keys() == e["arrays"].keys(), f"{at}: arrays"
        for name, values in e["arrays"].items():
            ours = g["arrays"][name]
            assert ours.dtype == values.dtype, f"{at}: {name} dtype {ours.dtype}"
            assert np.array_equal(ours, values), f"{at}: {name} differs"
