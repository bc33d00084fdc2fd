"""What the readers of formats without CV terms (MGF, mzXML) make of their plain values: the
PSI-MS params mzML would carry, each built here once, and one rule for every other value (a
userParam holding a plain scalar)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..format import vocabulary as V
from ..model.records import Param, SelectedIonRecord, SignalArray, Value


def plain(value: Any) -> Value:
    """A value as a plain scalar: None, bool, int, float and str kept (subclasses, such as
    pyteomics' floats that carry a unit, made plain), lists and tuples joined with spaces,
    anything else as its text."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return str(value)


def user_params(items: Iterable[tuple[str, Any]]) -> list[Param]:
    """A userParam ``name = plain(value)`` per item."""
    return [Param(name, None, plain(value)) for name, value in items]


def spectrum_params(
    level: int, *, ms1: bool, centroid: bool | None = None, polarity: str | None = None
) -> list[Param]:
    """MS level and spectrum type (MS1 or MSn), then the representation (when known) and the
    scan polarity (``+`` or ``-``, when known)."""
    params = [
        Param.term(V.MS_LEVEL, level),
        Param.term(V.MS1_SPECTRUM if ms1 else V.MSN_SPECTRUM),
    ]
    if centroid is not None:
        params.append(Param.term(V.CENTROID_SPECTRUM if centroid else V.PROFILE_SPECTRUM))
    if polarity in ("+", "-"):
        params.append(Param.term(V.POSITIVE_SCAN if polarity == "+" else V.NEGATIVE_SCAN))
    return params


def selected_ion(
    mz: float,
    charge: int | None = None,
    intensity: float | None = None,
    possible_charges: Sequence[int] = (),
) -> SelectedIonRecord:
    """A selected ion: its m/z, charge state, other possible charge states and intensity."""
    params = [Param.term(V.SELECTED_ION_MZ, float(mz), V.UNIT_MZ)]
    if charge is not None:
        params.append(Param.term(V.CHARGE_STATE, int(charge)))
    params += [Param.term(V.POSSIBLE_CHARGE_STATE, int(c)) for c in possible_charges]
    if intensity is not None:
        params.append(Param.term(V.PEAK_INTENSITY, float(intensity), V.UNIT_DETECTOR_COUNTS))
    return SelectedIonRecord(params)


def signal_arrays(mz: Any, intensity: Any) -> list[SignalArray]:
    """The m/z and intensity arrays (either may be None: left out), in native byte order."""
    out = []
    for values, accession, name, unit in (
        (mz, V.MZ_ARRAY, "m/z array", V.UNIT_MZ),
        (intensity, V.INTENSITY_ARRAY, "intensity array", V.UNIT_DETECTOR_COUNTS),
    ):
        if values is not None:
            values = np.asarray(values)
            if not values.dtype.isnative:
                values = values.astype(values.dtype.newbyteorder("="))
            out.append(SignalArray(accession, name, unit, values))
    return out
