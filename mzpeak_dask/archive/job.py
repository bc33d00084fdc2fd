"""One run's conversion as the coordinator holds it: its input and output checked, its locked
staging folder, and at the end the finished archive renamed into place — or everything it
wrote removed, leaving nothing at the output.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

from ..encode.contracts import ConversionResult
from ..errors import InputError
from ..model.run_paths import RunPaths
from ..options import ConvertOptions
from ..storage.inputs import check_regular_file, remote_input
from .container import Inputs, check_output, put_in_place
from .staging import Staging


def check_input(source: Path, name: str | None = None) -> None:
    """Refuse an input that cannot be read (errors call it ``name``, default ``source``)."""
    if remote_input(source):
        return  # read by ranges from storage, where it was found
    check_regular_file(source, name)  # before anything opens it (a FIFO, a device)
    if not os.access(source, os.R_OK):
        raise InputError(f"{source if name is None else name}: permission denied")


class RunJob:
    """A run being converted (:class:`~mzpeak_dask.model.run_paths.RunPaths`), staged in
    :attr:`staging`; its errors name the input and the output as the user did."""

    def __init__(self, paths: RunPaths, options: ConvertOptions, inputs: Inputs | None = None):
        """``inputs``: every input of the call, none of which the output may overwrite."""
        self.paths, self.options = paths, options
        self.source, self.output = source, output = paths.source, paths.output
        self.started = time.perf_counter()
        check_input(source, paths.named_source)
        check_output(output, options.overwrite, inputs or Inputs([source]), paths.named_output)
        self.staging = Staging(output, paths.named_output)

    def put_in_place(self, result: ConversionResult, archive: Path) -> ConversionResult:
        """Rename the finished ``archive`` (in the staging folder) to the output."""
        try:
            put_in_place(archive, self.output, self.options.overwrite, self.paths.named_output)
        except BaseException:
            self.abort()
            raise
        self.staging.cleanup()
        return replace(result, seconds=time.perf_counter() - self.started)

    def abort(self) -> None:
        """Remove everything this job wrote (nothing is left at OUTPUT)."""
        self.staging.cleanup()
