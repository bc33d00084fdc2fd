"""Target lists of targeted quantification, in the format of MINT (PyPI ``ms-mint``).

A list is a CSV or Parquet file (or a pandas DataFrame) with the columns ``peak_label``,
``mz_mean``, ``mz_width`` (ppm), ``rt_min``, ``rt_max`` and optionally ``rt_unit`` (``min`` or
``s``; default ``min``), ``intensity_threshold`` (default 0) and ``ms_level`` (default 1); other
columns are kept by the caller and ignored here. :func:`target_list` checks every row (one
line naming the first bad row: :class:`~mzpeak_dask.errors.TargetsError`) and gives the
targets as arrays, times in minutes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import TargetsError

REQUIRED = ("peak_label", "mz_mean", "mz_width", "rt_min", "rt_max")
DEFAULTS = {"rt_unit": "min", "intensity_threshold": 0.0, "ms_level": 1}
SECONDS = {"min": 1.0, "s": 60.0}  # divisor to minutes


@dataclass
class TargetList:
    """The targets in the order given (``labels`` and every array, one value per target)."""

    labels: np.ndarray  # peak_label, as strings
    mz_mean: np.ndarray
    delta: np.ndarray  # m/z half-width: mz_mean * mz_width * 1e-6
    rt_min: np.ndarray  # minutes
    rt_max: np.ndarray
    threshold: np.ndarray
    ms_level: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)


def read_targets(targets: pd.DataFrame | str | os.PathLike) -> tuple[pd.DataFrame, str]:
    """The target table and what to call it in errors: a DataFrame as it is, a ``.parquet``
    file read with pyarrow, anything else as CSV."""
    if isinstance(targets, pd.DataFrame):
        return targets, "targets"
    path = Path(targets)
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path)
    except FileNotFoundError:
        raise TargetsError(f"{path}: no such target list") from None
    except pd.errors.EmptyDataError:
        raise TargetsError(f"{path}: an empty target list (no rows)") from None
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        text = " ".join(str(exc).split())[:200]
        raise TargetsError(f"{path}: not a CSV or Parquet target list ({text})") from None
    return frame, str(path)


def _bad(name: str, row: int, frame: pd.DataFrame, problem: str) -> TargetsError:
    label = frame["peak_label"].iloc[row] if "peak_label" in frame.columns else None
    which = f"row {row + 1}" + (f" (peak_label {label!r})" if label is not None else "")
    return TargetsError(f"{name}: {which}: {problem}")


def _numbers(frame: pd.DataFrame, column: str, name: str) -> np.ndarray:
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        row = int(bad[0])
        raise _bad(name, row, frame, f"{column} is not a number ({frame[column].iloc[row]!r})")
    return values


def target_list(targets: pd.DataFrame | str | os.PathLike) -> TargetList:
    """Read and check a target list (see the module's docstring)."""
    frame, name = read_targets(targets)
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise TargetsError(
            f"{name}: no column {missing[0]!r} (a target list has the columns "
            f"{', '.join(REQUIRED)})"
        )
    if not len(frame):
        raise TargetsError(f"{name}: an empty target list (no rows)")
    frame = frame.reset_index(drop=True)
    for column, default in DEFAULTS.items():
        if column not in frame.columns:
            frame[column] = default
    labels = frame["peak_label"]
    if labels.isna().any():
        raise _bad(name, int(np.flatnonzero(labels.isna())[0]), frame, "no peak_label")
    numbers = {c: _numbers(frame, c, name) for c in (*REQUIRED[1:], "intensity_threshold")}
    for column in ("mz_mean", "mz_width"):
        bad = np.flatnonzero(numbers[column] <= 0)
        if len(bad):
            value = numbers[column][bad[0]]
            raise _bad(name, int(bad[0]), frame, f"{column} must be positive, got {value:g}")
    bad = np.flatnonzero(numbers["rt_min"] > numbers["rt_max"])
    if len(bad):
        k = int(bad[0])
        rt = (numbers["rt_min"][k], numbers["rt_max"][k])
        raise _bad(name, k, frame, f"rt_min {rt[0]:g} > rt_max {rt[1]:g}")
    unit = frame["rt_unit"].astype(str).str.strip()
    bad = np.flatnonzero(~unit.isin(list(SECONDS)).to_numpy())
    if len(bad):
        found = frame["rt_unit"].iloc[bad[0]]
        raise _bad(name, int(bad[0]), frame, f"rt_unit {found!r} is neither 'min' nor 's'")
    level = _numbers(frame, "ms_level", name)
    bad = np.flatnonzero((level < 1) | (level != np.round(level)))
    if len(bad):
        raise _bad(name, int(bad[0]), frame, f"ms_level {level[bad[0]]:g} is not 1, 2, ...")
    scale = unit.map(SECONDS).to_numpy(dtype=np.float64)
    mz = numbers["mz_mean"]
    return TargetList(
        labels=labels.astype(str).to_numpy(),
        mz_mean=mz,
        delta=mz * numbers["mz_width"] * 1e-6,
        rt_min=numbers["rt_min"] / scale,
        rt_max=numbers["rt_max"] / scale,
        threshold=numbers["intensity_threshold"],
        ms_level=level.astype(np.int64),
    )


__all__ = ["REQUIRED", "TargetList", "read_targets", "target_list"]
