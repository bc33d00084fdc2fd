"""Where an exported run goes when it is not a folder of a local store: a remote store (one
object per chunk, as zarr lays it out) or a single file per run (a ZIP store).

The run is built as today in a local staging group (workers write its chunk objects directly),
then copied key by key through zarr's own store classes: ``FsspecStore`` for a remote store,
``ZipStore`` for a single file. A remote run's group ``zarr.json`` is written last, so zarr sees
no run until all of it is there, and a failure deletes what was written; a single file is
written beside its final name and renamed (or, in a bucket, uploaded as one object, which
appears only complete).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Any

from ..errors import OutputError
from ..storage.deadline import StorageDeadlineError, deadline
from ..storage.uploads import upload_file
from ..storage.urls import check_writable, default_options, filesystem, is_url, join
from ..zarr_runs.locations import ZIP_SUFFIX

COPY_CONCURRENCY = 32  # keys in flight to a remote store


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


def _keys(folder: Path) -> list[str]:
    keys = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    # the group's zarr.json last: zarr sees the run only when everything else is there
    return sorted(keys, key=lambda k: (k == "zarr.json", k))


async def _copy(folder: Path, store: Any) -> None:
    from zarr.core.buffer import default_buffer_prototype

    prototype = default_buffer_prototype()
    keys = _keys(folder)
    limit = asyncio.Semaphore(COPY_CONCURRENCY)

    async def put(key: str) -> None:
        async with limit:
            data = (folder / key).read_bytes()
            await asyncio.wait_for(store.set(key, prototype.buffer.from_bytes(data)), deadline())

    await asyncio.gather(*(put(k) for k in keys[:-1]))
    await put(keys[-1])


def _run(coroutine: Any) -> None:
    from zarr.core.sync import sync

    sync(coroutine)


def publish(folder: Path, location: str, single_file: bool, overwrite: bool) -> None:
    """Copy the run group staged in ``folder`` to ``location`` (see the module docstring)."""
    if exists(location, single_file) and not overwrite:
        raise OutputError(f"{location}: appeared during the export; not replaced")
    if single_file:
        _publish_zip(folder, location)
    else:
        _publish_store(folder, location)


def _publish_zip(folder: Path, location: str) -> None:
    from zarr.storage import ZipStore

    local = not is_url(location)
    where = Path(location).parent if local else None
    handle, name = tempfile.mkstemp(prefix=".run-", suffix=ZIP_SUFFIX, dir=where)
    os.close(handle)
    zipped = Path(name)
    try:
        store = ZipStore(zipped, mode="w")
        try:
            _run(_copy(folder, store))
        finally:
            store.close()
        if local:
            os.replace(zipped, location)
        else:
            upload_file(zipped, location)
    finally:
        zipped.unlink(missing_ok=True)


def _publish_store(folder: Path, location: str) -> None:
    from zarr.storage import FsspecStore

    check_writable(location)
    store = FsspecStore.from_url(location, storage_options=default_options())
    try:
        _run(_within(store.delete_dir("")))  # an older run (overwrite was checked)
        try:
            _run(_copy(folder, store))
        except BaseException:
            _run(_within(store.delete_dir("")))
            raise
    except TimeoutError:  # each request to the store has the storage deadline
        raise StorageDeadlineError(
            f"{location}: no answer from the store within {deadline():g} s"
        ) from None


async def _within(call: Any) -> Any:
    """``call`` awaited for the storage deadline at most."""
    return await asyncio.wait_for(call, deadline())


__all__ = ["exists", "publish", "staging_folder", "target"]
