"""Conversions whose input or output is a URL (``s3://``, ``gs://``, ``az://``; ``https://``
inputs only).

An uncompressed mzML, MGF, mzXML or mzMLb input URL is read where it lies: the survey and
every partition read their own byte ranges of the object (:mod:`.storage.inputs`); its job
keeps a local path in the staging folder where only the URL is noted. Compressed input URLs
(``.gz``/``.bz2``, which cannot be read from the middle) are streamed into the staging folder
as they are (the readers decompress them there), converted as local files, and the staged
copies deleted.

An output URL gets its archive built in the staging folder and uploaded: on S3 its parts are
sent while the run converts in this process, and the rest when it ends
(:mod:`.storage.streaming`); elsewhere the finished archive is sent (:mod:`.storage.uploads`).
One PUT, or a multipart upload aborted on any failure or interrupt: only a complete archive
ever appears at the key. Local paths pass through untouched.

A process killed outright (SIGKILL, out of memory) cleans up nothing; the next conversion
cleans up after it. The staging folder in the system's temporary folder is a locked staging
folder (:mod:`.archive.staging`), swept there once its process is gone, and the multipart
uploads to an output key that dead processes of this program left are aborted
(:mod:`.storage.owned`) before a new one starts.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path

from ..archive.staging import Staging, sweep
from ..encode.contracts import ConversionResult
from ..errors import (
    InputError,
    MzPeakDaskError,
    OptionsError,
    OutputExistsError,
    StorageError,
)
from ..model.run_paths import RunPaths
from ..readers import compression_of, detect_format
from ..storage.failures import cause
from ..storage.inputs import RANGE_FORMATS, sizes_held
from ..storage.origins import mark_origin
from ..storage.owned import abort_dead
from ..storage.probe import bucket_of, exists, probe_output
from ..storage.streaming import GrowingUpload, follow, unfollow
from ..storage.uploads import upload_file
from ..storage.urls import basename, filesystem, is_url, local_path

log = logging.getLogger(__name__)

OnResult = Callable[[int, "ConversionResult | MzPeakDaskError"], None]
TEMPORARY = "mzpeak-dask-staging"  # the staging folders in the temporary folder: .NAME.*.tmp


class StagedJobs:
    """The jobs of a conversion with their URLs replaced by staged local paths; their runs
    are named as ``names`` says (default: the paths and URLs given). The caller converts the
    runs :meth:`start` gives, telling each outcome to :meth:`finished`, then reads
    :meth:`outcomes`."""

    def __init__(
        self,
        jobs: list[tuple[str | os.PathLike, str | os.PathLike]],
        options,  # noqa: ANN001 - ConvertOptions
        names: Sequence[tuple[str, str]] | None = None,
    ):
        self.jobs = [(local_path(i), local_path(o)) for i, o in jobs]
        self.names = names or [(str(i), str(o)) for i, o in self.jobs]
        self.remote = any(is_url(i) or is_url(o) for i, o in self.jobs)
        self.options = options
        self.folder: Path | None = None
        self.staging: Staging | None = None
        self.local: list[tuple[Path, Path]] = []
        self.errors: dict[int, MzPeakDaskError] = {}
        self._probed: dict[str, str | None] = {}  # bucket -> why it cannot take outputs
        self.todo: list[int] = []  # the jobs converted, in the order of start()'s runs
        self.results: dict[int, ConversionResult | MzPeakDaskError] = {}
        self.fail_fast = True
        self.on_result: OnResult | None = None
        self._held = ExitStack()

    def __enter__(self) -> StagedJobs:
        # each input's size is asked once for the whole call, not at each look at it
        self._held.enter_context(sizes_held())
        if self.remote:
            name = Path(tempfile.gettempdir()) / TEMPORARY
            sweep(name.parent, name)  # what conversions that died left there
            self.staging = Staging(name)
            self.folder = self.staging.path
        for k, (source, output) in enumerate(self.jobs):  # the outputs asked first: no input
            staged = self._output(k, output)  # is read for an output that cannot be written
            self.local.append((self._input(k, source), staged))
        return self

    def __exit__(self, *exc: object) -> None:
        self._held.close()
        for _, output in self.local:  # runs that never ended (an interrupt): no object
            _abort(unfollow(output))
        if self.staging is not None:
            self.staging.cleanup()

    def _slot(self, k: int) -> Path:
        folder = self.folder / str(k)
        folder.mkdir(exist_ok=True)
        return folder

    def _input(self, k: int, source: str | os.PathLike) -> Path:
        if not is_url(source):
            return Path(source)
        staged = self._slot(k) / basename(source)
        if k in self.errors:  # its output cannot be written: nothing to read it for
            return staged
        try:
            if by_ranges(str(source)):
                mark_origin(staged, str(source))  # read where it lies: nothing copied here
            else:
                download(str(source), staged)
        except MzPeakDaskError as exc:
            self.errors[k] = exc
        return staged

    def _output(self, k: int, output: str | os.PathLike) -> Path:
        if not is_url(output):
            return Path(output)
        output = str(output)
        try:
            if self.options.unpacked:
                raise OptionsError(
                    f"{output}: an archive in object storage is a ZIP (no --unpacked)"
                )
            where = bucket_of(output)  # each bucket asked once
            if where not in self._probed:
                try:
                    probe_output(output)
                    self._probed[where] = None
                except StorageError as exc:
                    self._probed[where] = str(exc).removeprefix(f"{output}: ")
            if self._probed[where] is not None:
                raise StorageError(f"{output}: {self._probed[where]}")
            abort_dead(output)  # what conversions to this key that were killed left
            if not self.options.overwrite and exists(output):
                raise OutputExistsError(output)
        except MzPeakDaskError as exc:
            self.errors.setdefault(k, exc)
        folder = self._slot(k) / "out"
        folder.mkdir(exist_ok=True)
        if k not in self.errors:  # sent as it is written where the store allows it
            follow(folder / basename(output), output)
        return folder / basename(output)

    def start(self, fail_fast: bool, on_result: OnResult | None) -> list[RunPaths]:
        """The runs left to convert (their outcomes go to :meth:`finished`, in their order);
        the jobs that failed already are told to ``on_result`` (with ``fail_fast``, the first
        is raised)."""
        if fail_fast and self.errors:
            raise next(iter(self.errors.values()))
        self.fail_fast, self.on_result = fail_fast, on_result
        self.results = dict(self.errors)
        self.todo = [k for k in range(len(self.jobs)) if k not in self.errors]
        if on_result is not None:
            for k, error in self.errors.items():
                on_result(k, error)
        return [RunPaths(*self.local[k], *self.names[k]) for k in self.todo]

    def finished(self, j: int, outcome: ConversionResult | MzPeakDaskError) -> None:
        """The ``j``-th run :meth:`start` gave has ended: its archive goes to its URL."""
        k = self.todo[j]
        self.results[k] = self.finish(k, outcome)
        if self.on_result is not None:
            self.on_result(k, self.results[k])
        if self.fail_fast and isinstance(self.results[k], BaseException):
            raise self.results[k]

    def outcomes(self) -> list[ConversionResult | MzPeakDaskError]:
        """Each job's outcome, in the order of the jobs."""
        return [self.results[k] for k in range(len(self.jobs))]

    def finish(self, k: int, outcome: ConversionResult | MzPeakDaskError):
        """Upload job ``k``'s staged archive to its URL (the outcome names the URLs)."""
        output = self.jobs[k][1]
        upload = unfollow(self.local[k][1])
        if isinstance(outcome, BaseException):
            _abort(upload)
            return outcome
        try:
            if is_url(output):
                if upload is not None:
                    upload.complete(self.local[k][1])
                else:
                    upload_file(self.local[k][1], str(output))
                shutil.rmtree(self.local[k][1].parent, ignore_errors=True)
        except MzPeakDaskError as exc:
            return exc
        return outcome


def _abort(upload: GrowingUpload | None) -> None:
    """Discard ``upload`` (if any) of a run that failed or never ended; a store that kept its
    parts is told in a warning (the run's own failure is the error)."""
    left = upload.abort() if upload is not None else None
    if left is not None:
        log.warning("%s: %s", upload.url, left)


def by_ranges(url: str) -> bool:
    """Whether the input at ``url`` is read by ranges where it lies (uncompressed mzML, MGF
    or mzXML: the survey and each partition read their own bytes), not staged here first."""
    if compression_of(url) is not None:
        return False  # a gzip/bzip2 stream cannot be read from the middle
    return detect_format(url).name in RANGE_FORMATS


def download(url: str, target: Path) -> None:
    """Stream ``url`` into ``target`` (one line naming the URL if it fails)."""
    fs, path = filesystem(url)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:  # the client's own streaming (concurrent ranged GETs for a large S3 object)
        fs.get_file(path, str(target))
    except MzPeakDaskError:
        raise
    except Exception as exc:  # every client has its own errors; a user needs one line
        what = cause(exc)
        raise (InputError if what == "no such object" else StorageError)(f"{url}: {what}") from None
    mark_origin(target, url)  # the archive names the object, not this copy


__all__ = ["StagedJobs", "by_ranges", "download"]
