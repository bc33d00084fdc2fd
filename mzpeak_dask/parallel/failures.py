"""What the coordinator tells the user when a run fails: one line naming the input (and the
spectra of the partition, or the step), whatever failed where.

A task's number says where: a partition's (0, 1, ...), the plan's or the finishing one's. A
failure to write the output names the output and its cause rather than a temporary file; a
worker that died each time it ran a task becomes a :class:`~mzpeak_dask.errors.WorkerDiedError`
(which a batch recognises), and a task the cluster cancelled (a restart) a ``ClusterError``.

The package's own errors (:class:`~mzpeak_dask.errors.MzPeakDaskError`) are built with the
names the user gave (:class:`~mzpeak_dask.run_paths.RunPaths`: the tasks receive them beside
the local paths) and pass as they are. Only another library's exception, whose text this
package does not word, has the run's local paths in it told by those names
(:meth:`~mzpeak_dask.run_paths.RunPaths.foreign`).
"""

from __future__ import annotations

import errno
import os
import re
from concurrent.futures import CancelledError

from ..archive.job import RunJob
from ..contracts import RunPlan
from ..errors import ClusterError, MzPeakDaskError, OutputError, WorkerDiedError

PLAN = -1  # a run's plan task
FINISH = -2  # the task finishing a run (or this process putting the archive in place)
WHOLE = -3  # a task converting small runs whole
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
    job: RunJob, n: int, exc: BaseException, plan: RunPlan | None = None
) -> MzPeakDaskError:
    """``exc``, raised by the run's task ``n`` (its plan's, a partition's of ``plan``, or the
    finishing one), as the one-line error the user sees."""
    output = _output_failure(job, exc)
    if output is not None:
        return output
    if isinstance(exc, MzPeakDaskError):
        return exc  # worded with the user's names
    if n == PLAN:
        where = "planning the conversion"
    elif n == WHOLE:
        where = "converting the run"
    elif n == FINISH or plan is None:
        where = "writing the archive"
    else:
        items = plan.partitions[n].items
        kind = "spectra" if items.kind == "spectrum" else "chromatograms"
        where = f"{kind} {items.start}-{items.stop - 1} (0-based)"
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


__all__ = ["FINISH", "PLAN", "WHOLE", "describe_failure"]
