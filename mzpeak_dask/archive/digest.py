"""The input's SHA-256, recorded in the archive: taken by the task that finishes a run.

:class:`InputDigest` decides once how an input is hashed: a local file is read, an object in
storage streamed once (:func:`~mzpeak_dask.tables.file_metadata.file_sha256` does both). It
starts when the finishing task starts, in a thread beside the stitching (hashing and reading
release the GIL), and the writer asks for the digest only once the spectrum data members are
written, so the two overlap.
"""

from __future__ import annotations

import threading

from ..errors import InputError
from ..tables.file_metadata import file_sha256

HASH_SECONDS = 3600  # a terabyte read at 300 MB/s; storage calls have their own deadlines


class InputDigest:
    """The SHA-256 of ``source`` (a path, or a URL read by ranges), begun now; errors call it
    ``name`` (what the user named it; default ``source``)."""

    def __init__(self, source: str, name: str | None = None, known: str | None = None):
        self.source = source
        self.name = source if name is None else name
        self._value: str | None = known  # taken on the way by a survey that read it whole
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="mzpeak-digest", daemon=True)
        if known is None:
            self._thread.start()

    def _run(self) -> None:
        try:
            self._value = file_sha256(self.source)
        except BaseException as exc:  # noqa: BLE001 - raised to whoever asks for the digest
            self._error = exc

    def result(self) -> str:
        """The digest; raises what hashing raised, or an error after :data:`HASH_SECONDS`."""
        if self._value is not None:
            return self._value
        self._thread.join(HASH_SECONDS)
        if self._thread.is_alive():
            raise InputError(f"{self.name}: not hashed in {HASH_SECONDS} s")
        if self._error is not None:
            raise self._error
        assert self._value is not None
        return self._value


__all__ = ["InputDigest"]
