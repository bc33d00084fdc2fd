"""pyteomics dictionaries -> format-neutral records (params keep accessions and units).

pyteomics flattens cvParams into ``{name: value}`` where the key is a ``cvstr`` carrying
``accession`` and ``unit_accession``; repeated params become lists. Plain ``str`` keys are XML
attributes. These helpers turn such dicts back into :class:`~mzpeak_dask.model.records.Param` lists.
"""

from __future__ import annotations

from typing import Any

from ..model.records import Param, PrecursorRecord, ScanRecord, SelectedIonRecord
from .plain_values import plain


def params_of(info: dict[str, Any], skip: frozenset[str] | set[str] = frozenset()) -> list[Param]:
    """Every cvParam/userParam of a pyteomics dict, in document order."""
    out: list[Param] = []
    for key, value in info.items():
        accession = getattr(key, "accession", False)
        if accession is False or key in skip or isinstance(value, dict):
            continue  # plain attribute or nested element
        unit = getattr(key, "unit_accession", None)
        values = value if isinstance(value, list) else [value]
        for v in values:
            if isinstance(v, dict):
                continue
            value = plain(v)
            out.append(Param(str(key), accession, None if value == "" else value, unit))
    return out


def _listed(info: dict[str, Any], container: str, item: str) -> list[dict[str, Any]]:
    block = info.get(container)
    if not isinstance(block, dict):
        return []
    items = block.get(item, [])
    return items if isinstance(items, list) else [items]


def scans_of(info: dict[str, Any]) -> tuple[list[ScanRecord], list[Param]]:
    """The scans of a spectrum, and the params of the scanList itself (e.g. 'no combination')."""
    scan_list = info.get("scanList")
    list_params = params_of(scan_list) if isinstance(scan_list, dict) else []
    scans = []
    for scan in _listed(info, "scanList", "scan"):
        windows = [params_of(w) for w in _listed(scan, "scanWindowList", "scanWindow")]
        scans.append(
            ScanRecord(
                params=params_of(scan),
                instrument_configuration_ref=scan.get("instrumentConfigurationRef"),
                scan_windows=windows,
            )
        )
    return scans, list_params


def precursors_of(info: dict[str, Any]) -> list[PrecursorRecord]:
    out = []
    for prec in _listed(info, "precursorList", "precursor"):
        out.append(precursor_of(prec))
    return out


def precursor_of(prec: dict[str, Any]) -> PrecursorRecord:
    ions = [
        SelectedIonRecord(params_of(i)) for i in _listed(prec, "selectedIonList", "selectedIon")
    ]
    window = prec.get("isolationWindow")
    activation = prec.get("activation")
    return PrecursorRecord(
        spectrum_ref=prec.get("spectrumRef"),
        isolation_window=params_of(window) if isinstance(window, dict) else [],
        activation=params_of(activation) if isinstance(activation, dict) else [],
        selected_ions=ions,
        params=params_of(prec),
    )


def product_of(info: dict[str, Any]) -> list[Param]:
    product = info.get("product")
    if isinstance(product, list):
        product = product[0] if product else None
    if not isinstance(product, dict):
        return []
    window = product.get("isolationWindow")
    return params_of(window) if isinstance(window, dict) else []
