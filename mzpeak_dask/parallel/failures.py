"""What the coordinator tells the user when a run fails: one line naming the input (and the
spectra of the partition, or the step), whatever failed where.

A task's :class:`Step` says where: the plan, a partition (told by its items), the finishing
task or one converting small runs whole. A failure to write the output names the output and
its cause rather than a temporary file; a worker that died each time it ran a task becomes a
:class:`~mzpeak_dask.errors.WorkerDiedError` (which a batch recognises), and a task the
cluster cancelled (a restart) a ``ClusterError``.

The package's own errors (:class:`~mzpeak_dask.errors.MzPeakDaskError`) are built with the
names the user gave (:class:`~mzpeak_dask.model.run_paths.RunPaths`: the tasks receive them beside
the local paths) and pass as they are. Only another library's exception, whose text this
package does not word, has the run's local paths in it told by those names
(:meth:`~mzpeak_dask.model.run_paths.RunPaths.foreign`).
"""

from __future__ import annotations

import enum
import errno
import os
import re
from concurrent.futures import CancelledError

from ..archive.job import RunJob
from ..encode.contracts import Partition
from ..errors import ClusterError, MzPeakDaskError, OutputError, WorkerDiedError


class Step(enum.Enum):
    """What a task does for its run, in the words a failure of it is told with."""

    PLAN = "planning the conversion"
    PART = "writing a partition"  # told by the partition's items when it is known
    FINISH = "writing the archive"  # or this process putting the archive in place
    WHOLE = "converting the run"  # a task converting small runs whole


# errors of writing, whatever is written: they name the output, not a temporary file
_WRITE_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS}
_ERRNO_TEXT = re.compile(r"\[errno (\d+)\]", re.IGNORECASE)  # in Arrow's messages


def _output_failure(job: RunJob, exc: BaseException) -> OutputError | None:
    """A failure to write the output (a full disk, a file too large, the temporary folder
    removed under it), told by the output and the cause rather than a temporary path."""
    message, staging = str(exc), str(job.staging.path)
    cannot = f"{job.paths.named_source}: cannot write {job.paths.named_output}"
    if not job.staging.cleaned and not job.staging.path.exists():
        return OutputError(f"{cannot}: its temporary folder was removed during the conversion")
    code = getattr(exc, "errno", None)
    if code is None and (found := _ERRNO_TEXT.search(message)):
        code = int(found.group(1))
    if code in _WRITE_ERRNOS:
        return OutputError(f"{cannot}: {os.strerror(code)}")
    if staging not in message or not isinstance(exc, OSError):
        return None
    reason = re.search(r"\(([^()]+)\)\s*$", message)  # "STAGING/FILE: cannot write (REASON)"
    cause = reason.group(1) if reason else re.sub(re.escape(staging) + r"\S*", "", message)
    return OutputError(f"{cannot}: {cause.strip(' :')}")


def describe_failure(
    job: RunJob, step: Step, exc: BaseException, part: Partition | None = None
) -> MzPeakDaskError:
    """``exc``, raised by the run's task doing ``step`` (for ``part``, a partition's), as the
    one-line error the user sees."""
    output = _output_failure(job, exc)
    if output is not None:
        return output
    if isinstance(exc, MzPeakDaskError):
        return exc  # worded with the user's names
    where = step.value
    if part is not None:
        kind = "spectra" if part.items.kind == "spectrum" else "chromatograms"
        where = f"{kind} {part.items.start}-{part.items.stop - 1} (0-based)"
    if type(exc).__name__ == "KilledWorker":  # Dask gave up: its worker died each time
        return WorkerDiedError(
            f"{job.paths.named_source}: {where}: the worker process died each time it "
            "tried (the input may exhaust the worker's memory or crash it)"
        )
    if isinstance(exc, CancelledError):
        return ClusterError(
            f"{job.paths.named_source}: {where}: the Dask cluster cancelled it ({exc})"
        )
    detail = job.paths.foreign(str(exc), job.staging.path)
    return MzPeakDaskError(f"{job.paths.named_source}: {where}: {type(exc).__name__}: {detail}")


__all__ = ["Step", "describe_failure"]
