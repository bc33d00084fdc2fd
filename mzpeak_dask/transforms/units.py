"""Time arrays in minutes.

The specification expresses time columns in minutes (``docs/conformance.md``, semantic rules;
``docs/schemas/chromatograms.md`` recommends minutes for the chromatogram time axis), and the
reference writer stores chromatogram times in minutes. mzML allows seconds (most SRM, UV and
timsTOF files use them), so a time array in seconds or milliseconds is converted, to float64:
the stored minutes times 60 give the source values back to within one float64 rounding
(exactly, for float32 sources).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..format import vocabulary as V
from ..model.records import SignalArray

__all__ = ["in_minutes"]

_PER_MINUTE = {V.UNIT_SECOND: 60.0, V.UNIT_MILLISECOND: 60_000.0}


def in_minutes(arrays: list[SignalArray]) -> list[SignalArray]:
    """``arrays`` with every time array in seconds or milliseconds converted to minutes."""
    out = []
    for a in arrays:
        factor = _PER_MINUTE.get(a.unit or "") if a.array_type == V.TIME_ARRAY else None
        if factor is not None:
            minutes = np.asarray(a.values, dtype=np.float64) / factor
            a = replace(a, values=minutes, unit=V.UNIT_MINUTE)
        out.append(a)
    return out
