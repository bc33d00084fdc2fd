"""A run's paths: where this process reads and writes (local paths, or the staged stand-ins
of URLs) and what the user named (the paths or URLs given). Every message and result about a
run is built with the names, in one place (:meth:`RunPaths.shown`, :meth:`RunPaths.error`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import MzPeakDaskError


@dataclass(frozen=True)
class RunPaths:
    """``source`` is converted into ``output`` (both local); the user named them
    ``named_source`` and ``named_output``."""

    source: Path
    output: Path
    named_source: str
    named_output: str

    @classmethod
    def of(cls, source: str | os.PathLike, output: str | os.PathLike) -> RunPaths:
        """Paths the user gave as they are (nothing staged)."""
        return cls(Path(source), Path(output), str(source), str(output))

    @property
    def staged(self) -> bool:
        return (str(self.source), str(self.output)) != (self.named_source, self.named_output)

    def shown(self, message: str, *places: str | os.PathLike) -> str:
        """``message`` naming the input and the output as the user did, where it names a
        staged path (the input's or output's, or one of ``places`` of the run's, such as its
        staging folder, standing for the input)."""
        for place in places:  # a file in it (a decompressed copy of the input), or itself
            message = re.sub(re.escape(str(place)) + r"(/[^\s:]+)?", self.named_source, message)
        for path, name in ((self.source, self.named_source), (self.output, self.named_output)):
            if str(path) != name:
                message = message.replace(str(path), name)
        return message

    def error(self, exc: MzPeakDaskError, *places: str | os.PathLike) -> MzPeakDaskError:
        """``exc`` naming the input and the output as the user did."""
        message = self.shown(str(exc), *places)
        if message == str(exc):
            return exc
        try:
            return type(exc)(message)
        except TypeError:  # an error class that takes other arguments: as it is
            return exc


__all__ = ["RunPaths"]
