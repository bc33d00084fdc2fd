"""Where an exported run is built and how it becomes visible: a folder of a local store, a
remote store (an object store's prefix), or a single file per run (a ZIP store).

Workers write each Zarr chunk object straight to a *work* location (:attr:`Sink.work`): a
folder, or a prefix of the remote store, under a name of their own (``ARRAY.TASK``); the
coordinator builds the run's metadata (every ``zarr.json`` and the small tables) in a local
folder (:attr:`Sink.meta`) and gives each chunk its final key (``ARRAY/c/K``):

* **folder**: the run is built in a hidden folder beside its final name; its chunk files are
  renamed into place and the folder renamed to the run's name at the commit;
* **remote store**: chunk objects are written under a hidden prefix of the store; at the
  commit they are copied (server side) to the run's keys, the metadata uploaded, the group's
  ``zarr.json`` last (zarr sees no run until all of it is there), and the hidden prefix deleted;
  an older run it replaces is first copied aside, and put back if the commit fails
  (:class:`RemoteSink`);
* **single file**: the ZIP (stored members, ZIP64) is written beside its final name as the
  chunks come back, in chunk order, each chunk file appended in blocks of 1 MiB and deleted at
  once, so the staging folder holds only the chunks not yet appended; the metadata goes last,
  then the file is renamed (or, for a bucket, uploaded as one object, which appears only
  complete).

A failure, or an interruption, removes what was written (:meth:`Sink.abort`). A request to a
remote store that fails, on a worker or on the coordinator, is one line naming the store, the
run and the cause (:func:`reported`).

An export killed (SIGKILL, a lost machine) cannot clean up: its hidden prefixes stay. Each run
exported into a remote store holds a lease on its work prefix (:mod:`..batch.lease`: an OS
lock on this machine, a renewed lease object in the store) while it runs, and the next export
into the store sweeps what dead exports left (:func:`sweep_remote`), never a live export's:
a run left invisible half way through a replacement is put back from its saved copy, the
hidden prefixes deleted, each with a warning saying so.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tempfile
import uuid
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..batch.lease import prefix_held
from ..errors import MzPeakDaskError, OutputBusyError, OutputError, StorageError
from ..storage.failures import cause
from ..storage.outputs import new_file
from ..storage.uploads import upload_file
from ..storage.urls import filesystem, is_url, join
from ..zarr_runs.locations import ZIP_SUFFIX

_log = logging.getLogger(__name__)
COPY_BLOCK = 1 << 20  # bytes copied at a time into a ZIP member
_LEFT = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<tag>[0-9a-f]{8})$")  # hidden


def staging_folder(store: str) -> Path:
    """A local folder for the runs built before they are copied to ``store``."""
    base = None if is_url(store) else Path(store)
    if base is not None:
        base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=".zarr-staging-", dir=base))


def target(store: str, name: str, single_file: bool) -> str:
    """Where run ``name`` goes: ``STORE/name`` (a group), or ``STORE/name.zarr.zip``."""
    leaf = f"{name}{ZIP_SUFFIX}" if single_file else name
    return join(store, leaf) if is_url(store) else os.path.join(store, leaf)


def exists(location: str, single_file: bool) -> bool:
    """Whether a run is already at ``location``."""
    if not is_url(location):
        return os.path.exists(location)
    fs, path = filesystem(location)
    fs.invalidate_cache()
    return fs.exists(path if single_file else f"{path}/zarr.json")


def store_failure(store: str, names: Sequence[str], exc: BaseException) -> StorageError:
    """A failed request to ``store`` while exporting the runs ``names``, as one line naming
    the store, the runs and the cause (a StorageError's own words, without the store again)."""
    runs = f"run {names[0]}" if len(names) == 1 else f"runs {', '.join(names)}"
    what = str(exc).removeprefix(f"{store}: ") if isinstance(exc, StorageError) else cause(exc)
    return StorageError(f"{store}: {runs}: {what}")


@contextmanager
def reported(store: str, names: Sequence[str]) -> Iterator[None]:
    """Requests to ``store`` made within: when it is remote, any failure of one (a client's
    error, or a StorageError) is :func:`store_failure`; the package's other errors, an
    interruption and everything on a local store pass as they are."""
    if not is_url(store):
        yield
        return
    try:
        yield
    except StorageError as exc:
        raise store_failure(store, names, exc) from None
    except MzPeakDaskError:
        raise
    except Exception as exc:  # every client has its own errors; a user needs one line
        raise store_failure(store, names, exc) from None


def _meta_files(meta: Path) -> list[str]:
    """The metadata files of a run built in ``meta``, the group's ``zarr.json`` last."""
    keys = [p.relative_to(meta).as_posix() for p in meta.rglob("*") if p.is_file()]
    return sorted(keys, key=lambda k: (k == "zarr.json", k))


def work_key(array: str, task: int) -> str:
    """The name a worker writes the chunk of write task ``task`` of ``array`` under."""
    return f"{array}.{task}"


def put_object(work: str, key: str, data: bytes) -> None:
    """Write one chunk object ``key`` in the work location ``work`` (a worker's call)."""
    if is_url(work):
        fs, path = filesystem(join(work, key))
        fs.pipe_file(path, data)
        return
    # 0o666: the umask decides the mode, as for any new file
    fd = os.open(os.path.join(work, key), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


class Sink:
    """One run's destination (see the module docstring); ``moves`` are ``(work key, final
    key)`` pairs of chunk objects."""

    work: str  # where workers write chunk objects
    meta: Path  # local folder where the coordinator builds the metadata

    def arrived(self, moves: list[tuple[str, str]]) -> None:
        """Chunks whose final keys are known, in chunk order."""

    def commit(self, overwrite: bool) -> None:
        raise NotImplementedError

    def abort(self) -> list[str]:
        """Remove what the run wrote; the locations that could not be removed."""
        raise NotImplementedError


class FolderSink(Sink):
    def __init__(self, store: Path, name: str):
        self.final = store / name
        self.temporary = store / f".{name}.tmp-{uuid.uuid4().hex[:8]}"
        self.meta = self.temporary
        self.temporary.mkdir(parents=True)
        self.work = str(self.temporary / ".chunks")
        os.mkdir(self.work)
        self.moves: list[tuple[str, str]] = []

    def arrived(self, moves: list[tuple[str, str]]) -> None:
        self.moves += moves

    def commit(self, overwrite: bool) -> None:
        for source, key in self.moves:
            path = self.temporary / key
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(os.path.join(self.work, source), path)
        os.rmdir(self.work)
        _replace(self.temporary, self.final, overwrite)

    def abort(self) -> list[str]:
        shutil.rmtree(self.temporary, ignore_errors=True)
        return []


class ZipSink(Sink):
    def __init__(self, staging: Path, location: str, name: str):
        self.location = location
        local = not is_url(location)
        self.zipped = new_file(Path(location).parent if local else staging, ".run-", ZIP_SUFFIX)
        self.zip: zipfile.ZipFile | None = zipfile.ZipFile(
            self.zipped, "w", compression=zipfile.ZIP_STORED, allowZip64=True
        )
        self.work = str(Path(tempfile.mkdtemp(prefix=f"{name}.chunks-", dir=staging)))
        self.meta = Path(tempfile.mkdtemp(prefix=f"{name}.meta-", dir=staging))

    def _append(self, source: Path, key: str) -> None:
        with open(source, "rb") as src, self.zip.open(key, "w", force_zip64=True) as dst:
            shutil.copyfileobj(src, dst, COPY_BLOCK)
        source.unlink()

    def arrived(self, moves: list[tuple[str, str]]) -> None:
        for source, key in moves:
            self._append(Path(self.work) / source, key)

    def commit(self, overwrite: bool) -> None:
        if exists(self.location, True) and not overwrite:
            raise OutputError(f"{self.location}: appeared during the export; not replaced")
        for key in _meta_files(self.meta):
            self._append(self.meta / key, key)
        self.zip.close()
        self.zip = None
        if is_url(self.location):
            upload_file(self.zipped, self.location)
            self.zipped.unlink()
        else:
            os.replace(self.zipped, self.location)
        self._clean()

    def _clean(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)
        shutil.rmtree(self.meta, ignore_errors=True)

    def abort(self) -> list[str]:
        if self.zip is not None:
            try:
                self.zip.close()
            except (OSError, ValueError):  # closing a ZIP with a member still open
                pass
            self.zip = None
        self.zipped.unlink(missing_ok=True)
        self._clean()
        return []


class RemoteSink(Sink):
    """A run in a remote store (see the module docstring). Replacing an older run
    (``overwrite``) keeps it safe until the new one is whole:

    1. **save**: the old run's objects are copied (server side) to a hidden prefix beside it,
       ``.RUN.old-*``; the old run is untouched, so a failure here only removes that copy;
    2. **replace**: the old run's group ``zarr.json`` is deleted first (from then on zarr
       finds no run there), then its other metadata, then its chunks; the new chunks are
       copied in, the new metadata uploaded, the group's ``zarr.json`` last;
    3. the saved copy and the work prefix are deleted.

    A failure during 2 restores the saved copy (what the commit wrote is deleted, the old
    objects copied back, the group's ``zarr.json`` last) and deletes it. Why so: an object
    store has no rename, and the new run's chunks have the very keys of the old run's
    (``ARRAY/c/K``), so copying them in overwrites the old chunks: keeping the old run "in
    place until the new one is whole" cannot work, and a copy of it is the only way back.
    Since the group's ``zarr.json`` is removed before any old object is touched and written
    only once every other object of the (new, or restored) run is in place, a reader that
    opens the run sees the old run whole, no run, or the new run whole, never a mixture
    claiming to be valid. If the restore fails too, the saved copy stays and is named.
    """

    def __init__(self, store: str, staging: Path, name: str):
        tag = uuid.uuid4().hex[:8]
        self.final = join(store, name)
        self.work = join(store, f".{name}.tmp-{tag}")
        self.saved = join(store, f".{name}.old-{tag}")  # the old run, while it is replaced
        self.meta = Path(tempfile.mkdtemp(prefix=f"{name}.meta-", dir=staging))
        self.moves: list[tuple[str, str]] = []
        self.old: list[str] = []  # keys of the old run (relative to the run), once saved
        self.stage = "building"  # then "saving", "replacing", "done"
        self._held = contextlib.ExitStack()  # the lease on the work prefix, while it runs
        self._held.enter_context(prefix_held(self.work))

    def arrived(self, moves: list[tuple[str, str]]) -> None:
        self.moves += moves

    def commit(self, overwrite: bool) -> None:
        if exists(self.final, False) and not overwrite:
            raise OutputError(f"{self.final}: appeared during the export; not replaced")
        fs, final = filesystem(self.final)
        _, work = filesystem(self.work)
        _, saved = filesystem(self.saved)
        old = _run_keys(fs, final)  # an older run (overwrite was checked), or nothing
        if old:
            self.stage = "saving"
            for key in old:
                fs.copy(f"{final}/{key}", f"{saved}/{key}")
            self.old = old
        self.stage = "replacing"
        _remove_run(fs, final)
        for source, key in self.moves:
            fs.copy(f"{work}/{source}", f"{final}/{key}")
        for key in _meta_files(self.meta):  # the group's zarr.json last
            fs.put_file(str(self.meta / key), f"{final}/{key}")
        self.stage = "done"
        for where in self._clean(saved=True):  # the work prefix, the saved run, the metadata
            _log.warning("%s: not removed after the run was exported (hidden from readers)", where)

    def abort(self) -> list[str]:
        """Remove the work prefix and what a commit that failed half way wrote, and put back
        the old run it was replacing: a store that fails now too leaves them, named in the
        list returned, not raised (the failure that led here is the one to report)."""
        left: list[str] = []
        restored = True
        if self.stage == "replacing":
            try:
                fs, final = filesystem(self.final)
                _remove_run(fs, final)  # what the commit wrote
                _, saved = filesystem(self.saved)
                for key in self.old:  # the group's zarr.json last
                    fs.copy(f"{saved}/{key}", f"{final}/{key}")
            except Exception:  # noqa: BLE001 - named to the user instead
                restored = False
                if self.old:
                    left.append(f"{self.saved} (the old run, to copy back to {self.final})")
                left.append(self.final)
        return left + self._clean(saved=restored)

    def _clean(self, saved: bool) -> list[str]:
        """Delete the local metadata, the work prefix and (``saved``) the saved old run; the
        locations that could not be."""
        shutil.rmtree(self.meta, ignore_errors=True)
        left = []
        for location in [*([self.saved] if saved else []), self.work]:
            try:
                fs, path = filesystem(location)
                _remove(fs, path)
            except Exception:  # noqa: BLE001 - named to the user instead
                left.append(location)
        self._held.close()
        return left


def sweep_remote(store: str) -> None:
    """Settle what exports into ``store`` that were killed left (hidden ``.RUN.tmp-*`` and
    ``.RUN.old-*`` prefixes whose lease no live export holds), with a warning each."""
    fs, root = filesystem(store)
    fs.invalidate_cache()
    try:
        entries = fs.ls(root, detail=False)
    except FileNotFoundError:
        return
    left: dict[tuple[str, str], set[str]] = {}
    for entry in entries:
        if found := _LEFT.match(entry.rstrip("/").rsplit("/", 1)[-1]):
            left.setdefault((found["name"], found["tag"]), set()).add(found["kind"])
    for (name, tag), kinds in sorted(left.items()):
        try:
            with prefix_held(join(store, f".{name}.tmp-{tag}")):  # none: its export is dead
                _settle(fs, store, name, tag, kinds)
        except OutputBusyError:
            continue  # an export under way


def _settle(fs: Any, store: str, name: str, tag: str, kinds: set[str]) -> None:
    """Put back run ``name`` from the copy a dead export saved when it was left invisible
    (killed while replacing it), then delete the dead export's hidden prefixes."""
    final, saved, work = (
        filesystem(join(store, n))[1] for n in (name, f".{name}.old-{tag}", f".{name}.tmp-{tag}")
    )
    if "old" in kinds:
        if not fs.exists(f"{final}/zarr.json") and (keys := _run_keys(fs, saved)):
            _remove_run(fs, final)
            for key in keys:  # the group's zarr.json last
                fs.copy(f"{saved}/{key}", f"{final}/{key}")
            _log.warning(
                "%s: run %s put back as it was before an export that was stopped while "
                "replacing it (from .%s.old-%s)",
                store,
                name,
                name,
                tag,
            )
        _remove(fs, saved)
    _remove(fs, work)
    _log.warning(
        "%s: removed the hidden prefixes of run %s that a stopped export left (%s)",
        store,
        name,
        ", ".join(f".{name}.{k}-{tag}" for k in sorted(kinds)),
    )


def _run_keys(fs: Any, path: str) -> list[str]:
    """The keys of every object under ``path`` (relative to it), the group's ``zarr.json``
    last (copied in that order, a run is seen only once it is whole)."""
    fs.invalidate_cache()
    try:
        found = fs.find(path)
    except FileNotFoundError:
        return []
    keys = [k[len(path) + 1 :] for k in found if k.startswith(f"{path}/")]
    return sorted(keys, key=lambda k: (k == "zarr.json", k))


def _remove_run(fs: Any, path: str) -> None:
    """Delete the run under ``path``: its group's ``zarr.json`` first (zarr sees no run from
    then on), then the other metadata, then the rest."""
    keys = _run_keys(fs, path)
    group = [k for k in keys if k == "zarr.json"]
    meta = [k for k in keys if k.endswith("/zarr.json")]
    rest = [k for k in keys if not k.endswith("zarr.json")]
    for batch in (group, meta, rest):
        if batch:
            fs.rm([f"{path}/{k}" for k in batch])
    fs.invalidate_cache()


def _remove(fs: Any, path: str) -> None:
    """Delete every object under ``path`` (none: nothing to do)."""
    fs.invalidate_cache()
    try:
        found = fs.find(path)
    except FileNotFoundError:
        return
    if found:
        fs.rm(found)


def _replace(temporary: Path, final: Path, overwrite: bool) -> None:
    old = None
    if final.exists():
        if not overwrite:
            raise OutputError(f"{final}: appeared during the export; not replaced")
        old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:8]}")
        os.replace(final, old)
    os.replace(temporary, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def open_sink(store: str, name: str, single_file: bool, staging: Path | None) -> Sink:
    """The destination of run ``name`` in ``store``."""
    if single_file:
        return ZipSink(staging, target(store, name, True), name)
    if is_url(store):
        return RemoteSink(store, staging, name)
    return FolderSink(Path(store), name)


__all__ = [
    "Sink",
    "exists",
    "open_sink",
    "put_object",
    "reported",
    "staging_folder",
    "store_failure",
    "sweep_remote",
    "target",
    "work_key",
]
