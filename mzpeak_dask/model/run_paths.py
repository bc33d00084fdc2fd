"""A run's paths: where this process reads and writes (local paths, or the staged stand-ins
of URLs) and what the user named (the paths or URLs given).

Every message and result about a run is built with the names: the run's job, its tasks and
the readers receive them beside the local paths (a plan's partitions carry the input's name to
the workers) and word their errors with them, so no message is rewritten afterwards. The one
exception is the text of another library's exception (:meth:`RunPaths.foreign`), which this
package does not word.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path


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

    def foreign(self, message: str, *places: str | os.PathLike) -> str:
        """The text of another library's exception (an ``OSError`` naming a decompressed copy
        of the input, say: its words are not this package's) with the run's local paths told
        by the user's names: the input's and the output's, and ``places`` of the run's (its
        staging folder), with any file in them, standing for the input. Never used on this
        package's own errors, which are worded with the names to begin with."""
        for place in places:
            message = re.sub(re.escape(str(place)) + r"(/[^\s:'\"]+)?", self.named_source, message)
        for path, name in ((self.source, self.named_source), (self.output, self.named_output)):
            if str(path) != name:
                message = message.replace(str(path), name)
        return message


__all__ = ["RunPaths"]
