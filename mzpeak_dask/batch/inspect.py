"""Checking and describing each converted archive before the batch records it: validation, the
SHA-256 of every member, and a TIC thumbnail for the report.

Validation reads the whole archive, about a second for a 40 MB one, so done on the coordinator it
would limit a batch on many workers. When the workers can see the output folder, each check runs
as a task on the cluster and the coordinator only records its result.
"""

from __future__ import annotations

import contextlib
import hashlib
import zipfile
from pathlib import Path
from typing import Any

from .. import vocabulary as V
from ..parallel.executors import Task, executor_for
from ..read.archive import open_archive
from ..read.validate import ERROR, validate
from ..tables.file_metadata import file_sha256


def member_digests(archive: Path) -> dict[str, str]:
    """SHA-256 of every member of an archive (ZIP or folder)."""
    if archive.is_dir():
        return {p.name: file_sha256(p) for p in sorted(archive.iterdir()) if p.is_file()}
    digests = {}
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            digest = hashlib.sha256()
            with z.open(info) as f:
                while block := f.read(1 << 22):
                    digest.update(block)
            digests[info.filename] = digest.hexdigest()
    return digests


def tic_thumbnail(archive: Path, points: int = 120) -> list[list[float]]:
    """A downsampled total-ion chromatogram of the MS1 spectra (from the metadata)."""
    with open_archive(archive) as a:
        tables = a.tables_of(V.SPECTRUM)
        times, levels = tables.times, tables.ms_levels
        tic = tables.values_of(V.TOTAL_ION_CURRENT)
    pairs = [
        (t, v)
        for t, level, v in zip(times, levels, tic, strict=True)
        if t is not None and v is not None and level in (1, None)
    ]
    if len(pairs) > points:
        step = len(pairs) / points
        pairs = [pairs[int(k * step)] for k in range(points)]
    return [[float(t), float(v)] for t, v in pairs]


def inspect_output(output: str) -> dict[str, Any]:
    """``{"errors": [...]}`` for an archive that fails validation, else its warnings, member
    digests and TIC thumbnail (plain data: it may travel back from a worker)."""
    path = Path(output)
    problems = validate(path)
    errors = [str(p) for p in problems if p.severity == ERROR]
    if errors:
        return {"errors": errors}
    return {
        "errors": [],
        "warnings": [str(p) for p in problems],
        "members": member_digests(path),
        "tic": tic_thumbnail(path),
    }


class Inspector:
    """Runs :func:`inspect_output` on the cluster when its workers see ``folder``, else here,
    through the executor the conversion uses.

    ``submit`` returns at once; ``finished`` hands back the inspections that are done (all of
    them with ``wait``), each with the caller's tag."""

    def __init__(self, client: Any, folder: Path):
        executor = executor_for(client)
        self.executor = executor if executor.workers_see(folder) else executor_for(None)
        self._pending: list[tuple[str, Task]] = []  # (output, task)

    @property
    def client(self) -> Any:
        """The client inspections run on (None: here)."""
        return self.executor.client

    def submit(self, tag: Any, output: Path) -> None:
        # ahead of queued partitions, so that the durable state keeps up with the outputs
        task = self.executor.submit(tag, inspect_output, str(output), priority=1)
        self._pending.append((str(output), task))

    def finished(self, wait: bool = False) -> list[tuple[Any, dict[str, Any]]]:
        done, still = [], []
        for output, task in self._pending:
            if wait or self.executor.done(task):
                done.append((task.tag, self._result(task, output)))
            else:
                still.append((output, task))
        self._pending = still
        return done

    def abandon(self) -> list[Any]:
        """Drop the inspections not yet collected (after an interruption, when the cluster may
        be gone); returns their tags."""
        for _, task in self._pending:
            with contextlib.suppress(BaseException):
                self.executor.cancel(task)
        tags = [task.tag for _, task in self._pending]
        self._pending = []
        return tags

    def _result(self, task: Task, output: str) -> dict[str, Any]:
        try:
            return self.executor.result(task)
        except Exception:  # noqa: BLE001 - a lost worker or task: check here instead
            return inspect_output(output)
        finally:
            with contextlib.suppress(Exception):
                self.executor.release(task)
