"""Pieces of work over many runs that must not lose the other runs' results when one run
cannot be read: a task runs through :func:`guarded`, which hands back a :class:`Failed` (one
line naming the run) instead of raising, and the run's summary passes it on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import MzPeakDaskError


@dataclass(frozen=True)
class Failed:
    """Why a run could not be read (one line naming it)."""

    message: str


def one_line(source: str, exc: BaseException) -> str:
    """``source: reason`` on one line (an error of this package already names its file)."""
    text = " ".join(str(exc).split())
    if isinstance(exc, MzPeakDaskError) and source in text:
        return text
    reason = text if isinstance(exc, MzPeakDaskError) else f"{type(exc).__name__}: {text}"
    return f"{source}: {reason}"


def guarded(source: str, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, or a :class:`Failed` naming ``source`` when it raises. Failures of any
    kind are caught: a damaged file raises whatever its reader raises (pyarrow, zlib, zipfile
    ...), and the run is reported, not the whole call lost."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - reported as the run's failure
        return Failed(one_line(source, exc))


__all__ = ["Failed", "guarded", "one_line"]
