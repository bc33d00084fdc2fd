"""Batches in object storage: every MS file under a prefix (recursively) or the URLs of a
manifest, converted into the same tree under an output prefix.

The batch's state stays local (``--state-dir``; by default a folder named after the output
prefix under ``~/.cache/mzpeak-dask/batches``): a JSON file of what each input was (ETag and
size) and its record. ``--resume`` leaves out inputs whose ETag and size are unchanged and
whose archive is at its key, without reading them. The others are run as an ordinary local
batch (validation, retries, failure isolation) over a local staging tree (:mod:`.mirror`: each
key checked to stay in the tree), where an uncompressed mzML, MGF, mzXML or mzMLb input is only
noted (its URL: the workers read it by ranges where it lies, as ``convert`` does,
:mod:`..staged`) and the others are streamed in; an input that cannot be staged (a key that
would leave the tree, an object that is not MS data, a failed download) is a failed row of the
batch. Each archive is then uploaded (:mod:`..storage.uploads`: only complete objects appear),
and ``batch_report.json``, ``batch_report.html`` and ``catalog.parquet`` are written under the
output prefix, naming the URLs. One batch at a time writes into a prefix (:mod:`.lease`).
A batch first cleans up after batches into the same prefix that were killed: the multipart
uploads under the prefix they left are aborted (:mod:`..storage.owned`), and their staging
trees (locked staging folders, :mod:`..archive.staging`) removed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..archive.staging import Staging, sweep
from ..errors import InputError, MzPeakDaskError, OutputError, StorageError
from ..options import BatchOptions, ClusterOptions, ConvertOptions
from ..storage.failures import cause
from ..storage.inputs import check_regular_file
from ..storage.keys import safe_relative
from ..storage.owned import abort_dead
from ..storage.probe import probe_output
from ..storage.uploads import upload_file
from ..storage.urls import (
    LISTED,
    filesystem,
    is_url,
    join,
    local_path,
    scheme,
    without_userinfo,
)
from ..support.pathtext import redact
from . import report
from .lease import prefix_held
from .mirror import hidden, stage
from .runner import BatchOutcome, run_batch
from .sources import is_ms_file, manifest_entries, refuse_overwriting_objects
from .state import CONVERTED, FAILED, PENDING, SKIPPED, STATE_FILE, BatchState, owner_only

log = logging.getLogger(__name__)

STATE = "remote_state.json"
Checked = Callable[[int, int], None]  # (URLs of a manifest checked, all of them)


def default_state_dir(output: str) -> Path:
    """Where the state of a batch into ``output`` is kept unless ``--state-dir`` says."""
    key = hashlib.sha256(output.rstrip("/").encode()).hexdigest()[:16]
    return Path.home() / ".cache" / "mzpeak-dask" / "batches" / key


def list_inputs(
    source: str, checked: Checked | None = None
) -> list[tuple[str, str, str | None, int]]:
    """``(url, path under the prefix, ETag, size)`` of every MS file under a prefix, or of
    every URL of a manifest (a local file or a URL, one URL per line; ``checked(done, all)``
    told as its URLs are checked)."""
    if is_url(source) and source.rstrip("/").endswith((".txt", ".csv", ".tsv", ".manifest")):
        return _manifest(_read_text(source), source, checked)
    if not is_url(source):
        check_regular_file(source)  # a FIFO would block the read
        return _manifest(Path(source).read_text(), source, checked)
    fs, path = filesystem(source)
    try:
        found = fs.find(path, detail=True)
    except StorageError:  # the store gave no answer in time (already one line)
        raise
    except Exception as exc:  # every client has its own errors; a user needs one line
        raise InputError(f"{source}: cannot list ({cause(exc, 'bucket does not exist')})") from None
    prefix = source.rstrip("/")
    out = []
    for key, info in sorted(found.items()):
        relative = key[len(path.rstrip("/")) :].removeprefix("/")  # checked when staged
        if (
            info.get("type") == "file"
            and is_ms_file(Path(relative))
            and not hidden(relative)  # as a local batch, not entered
        ):
            out.append((join(prefix, relative), relative, _etag(info), int(info.get("size") or 0)))
    return out


def _read_text(url: str) -> str:
    fs, path = filesystem(url)
    try:
        return fs.cat_file(path).decode()
    except Exception as exc:  # every client has its own errors; a user needs one line
        raise InputError(f"{url}: {cause(exc)}") from None


def _manifest(
    text: str, name: str, checked: Checked | None
) -> list[tuple[str, str, str | None, int]]:
    """The inputs of a manifest's URLs: those in a bucket checked by one listing of each
    prefix holding some (not two requests a URL: a manifest of 10,000 mostly missing URLs
    is checked in a few listings), others (web servers) one by one."""
    urls = list(dict.fromkeys(manifest_entries(text, name)))
    found: dict[str, tuple[str, dict[str, Any] | None]] = {}  # url -> (its path, its info)
    absent: set[str] = set()  # the URLs their prefix's listing showed missing
    groups: dict[tuple[int, str], list[tuple[str, str]]] = {}  # (fs, prefix) -> URLs, paths
    filesystems: dict[int, Any] = {}
    for url in urls:
        try:
            fs, path = filesystem(url)
        except MzPeakDaskError:  # not a URL: a failed row once staged
            continue
        if scheme(url) in LISTED:
            filesystems[id(fs)] = fs
            groups.setdefault((id(fs), path.rpartition("/")[0]), []).append((url, path))
        else:
            found[url] = (path, _info(fs, path))
            _tell(checked, len(found), len(urls))
    for (fs_id, prefix), members in groups.items():
        fs = filesystems[fs_id]
        listed = _listing(fs, prefix)
        for url, path in members:
            info = listed.get(path.rstrip("/")) if listed is not None else _info(fs, path)
            found[url] = (path, info)
            if listed is not None and info is None:
                absent.add(url)
        _tell(checked, len(found), len(urls))
    out = []
    for url in urls:
        path, info = found.get(url, (url.split("://", 1)[-1], None))
        relative = without_userinfo(path.split("://", 1)[-1])  # no password in its keys
        if info is None or info.get("type") != "file":  # missing: a failed row once staged
            # (size None: known missing, failed when staged without another request)
            out.append((url, relative, None, None if url in absent else 0))
        else:
            out.append((url, relative, _etag(info), int(info.get("size") or 0)))
    _tell(checked, len(urls), len(urls))
    return out


def _info(fs: Any, path: str) -> dict[str, Any] | None:
    try:
        return fs.info(path)
    except (MzPeakDaskError, OSError):  # missing
        return None


def _listing(fs: Any, prefix: str) -> dict[str, dict[str, Any]] | None:
    """What lies directly under ``prefix`` (one listing, in pages), by path; None when it
    cannot be listed (credentials that may read but not list: each URL is asked alone)."""
    try:
        return {e["name"].rstrip("/"): e for e in fs.ls(prefix, detail=True, refresh=True)}
    except FileNotFoundError:  # no such prefix (or bucket): all missing
        return {}
    except Exception:  # noqa: BLE001 - every client has its own errors
        return None


def _tell(checked: Checked | None, done: int, total: int) -> None:
    if checked is not None:
        checked(done, total)


def _etag(info: dict[str, Any]) -> str | None:
    value = info.get("ETag") or info.get("etag") or info.get("md5Hash")
    return str(value).strip('"') if value else None


def run_remote_batch(
    source: str,
    output: str,
    options: ConvertOptions | None = None,
    cluster: ClusterOptions | None = None,
    batch: BatchOptions | None = None,
    *,
    client: Any = None,
    progress: Any = None,
    state_dir: str | os.PathLike | None = None,
) -> BatchOutcome:
    """Convert every input under ``source`` (a prefix or a manifest of URLs) into ``output``
    (a prefix); see the module docstring."""
    batch = batch or BatchOptions()
    output = str(local_path(output)).rstrip("/")
    if not is_url(output):
        raise MzPeakDaskError(f"{output}: a batch of URLs writes under a bucket prefix")
    if not is_url(source):
        check_regular_file(source)  # a local manifest: refused before the store is touched
    probe_output(output)  # a bucket that cannot take the archives: one line, before any work
    with prefix_held(output):  # one batch at a time into this prefix
        return _run_held(source, output, options, cluster, batch, client, progress, state_dir)


def _run_held(source, output, options, cluster, batch, client, progress, state_dir):
    work = Path(state_dir) if state_dir else default_state_dir(output)
    work.mkdir(parents=True, exist_ok=True)
    state = _load(work / STATE)
    step = getattr(progress, "step", None)  # the command's progress lines
    listing = list_inputs(str(source), step and (lambda n, of: step("checked", n, of, "URLs")))
    refuse_overwriting_objects([i[:2] for i in listing], output, report.NAMES)
    keep, todo = _resume(listing, state, output) if batch.resume else ({}, listing)
    abort_dead(output, under=True)  # what batches into the prefix that were killed left
    sweep(work, work / "batch")
    held = Staging(work / "batch")
    staging = held.path
    started = time.perf_counter()

    def finished(records: list[dict[str, Any]], interrupted: bool = False) -> BatchOutcome:
        """Keep what each input of ``records`` was and became (saved at once), and write the
        reports of the whole batch, the inputs a resume left out included."""
        by_input = {r["input"]: r for r in records}
        for url, _, etag, size in todo:
            if url in by_input:  # known by the URL without its password (as shown)
                state[redact(url)] = {"etag": etag, "size": size, "record": by_input[url]}
        _save(work / STATE, state)
        for url, entry in keep.items():
            by_input[url] = {**entry["record"], "status": SKIPPED}
        outcome = BatchOutcome(
            records=[by_input[url] for url, *_ in listing if url in by_input],
            seconds=time.perf_counter() - started,
            interrupted=interrupted,
        )
        _reports(staging / "out", output, outcome, batch)
        return outcome

    try:
        outcome = finished(
            _convert(
                todo, staging, output, options, cluster, batch, client, progress, finished
            ).records
        )
    finally:
        held.cleanup()
    return outcome


def _resume(listing, state, output) -> tuple[dict, list]:
    keep, todo = {}, []
    fs, _ = filesystem(output)
    for item in listing:
        url, _, etag, size = item
        entry = state.get(redact(url))
        record = (entry or {}).get("record", {})
        same = entry and entry["etag"] == etag and entry["size"] == size and etag is not None
        if (
            same
            and record.get("status") in (CONVERTED, SKIPPED)
            and fs.exists(filesystem(record["output"])[1])
        ):
            keep[url] = entry
        else:
            todo.append(item)
    return keep, todo


class _Names:
    """What the local batch calls each staged input (its URL) and archive (its key under the
    output prefix), so that its records, errors and progress name them so from the start;
    the local archive of each key is kept for the upload."""

    def __init__(self, urls: dict[str, str], local_out: Path, output: str):
        self.urls, self.local_out, self.output = urls, local_out, output
        self.archives: dict[str, Path] = {}  # output key -> the local archive

    def __call__(self, source: Path, archive: Path) -> tuple[str, str]:
        url = self.urls.get(str(source.resolve()), str(source))
        key = join(self.output, archive.relative_to(self.local_out).as_posix())
        self.archives[key] = archive
        return url, key


def _convert(
    todo, staging, output, options, cluster, batch, client, progress, finished
) -> BatchOutcome:
    """The local batch of the inputs to do, its records naming URLs, its archives uploaded.
    A batch stopped early (Ctrl-C, SIGTERM at a wall-time limit) still uploads the archives
    finished before the stop and hands every record to ``finished`` (kept, so a resume skips
    them, and reported, the others as pending)."""
    mirror, local_out = staging / "in", staging / "out"
    mirror.mkdir()
    urls, failed = stage(todo, mirror, output)  # those that cannot be staged fail alone

    def kept(records: list[dict[str, Any]], interrupted: bool = False) -> BatchOutcome:
        return finished(failed + records, interrupted)

    if not urls:
        return BatchOutcome(records=failed)
    names = _Names(urls, local_out, output)
    try:
        outcome = run_batch(
            mirror,
            local_out,
            options,
            cluster,
            batch.updated(resume=False),
            client=client,
            progress=progress,
            names=names,
        )
    except BaseException as exc:
        _keep_finished(local_out, names, output, kept, isinstance(exc, KeyboardInterrupt))
        raise
    try:
        _publish(outcome.records, names)
    except BaseException as exc:  # Ctrl-C or SIGTERM while uploading: what is up is kept
        try:
            kept(outcome.records, isinstance(exc, KeyboardInterrupt))
        except Exception as failed_too:  # noqa: BLE001 - must not replace what stopped it
            log.warning("%s: the archives uploaded were not recorded (%s)", output, failed_too)
        raise
    outcome.records = failed + outcome.records
    return outcome


def _keep_finished(
    local_out: Path, names: _Names, output: str, finished, interrupted: bool
) -> None:
    """After a stop: the archives the local batch recorded as converted are uploaded, and
    every record it left (the others pending) is kept and reported by ``finished``. A
    failure here is logged: it must not replace what stopped the batch."""
    try:
        if not (local_out / STATE_FILE).is_file():
            return
        local = BatchState(local_out)
        try:
            records = local.all()
        finally:
            local.close()
        _publish(records, names)
        finished(records, interrupted)
    except Exception as exc:  # noqa: BLE001 - see above
        log.warning("%s: the archives finished before the stop were not kept (%s)", output, exc)


def _publish(records: list[dict[str, Any]], names: _Names) -> None:
    """Upload each converted archive of ``records`` (which name URLs) to its key; a key that
    cannot be one (a name too long for it), or an upload the store still fails after its
    retries, fails that input alone. Stopped (Ctrl-C, SIGTERM), the archives not yet up are
    recorded as pending, those up as converted."""
    waiting = [r for r in records if r["status"] == CONVERTED]
    for n, record in enumerate(waiting):
        key = record["output"]
        try:  # a key under the output prefix (the staged names are checked already)
            safe_relative(key[len(names.output) + 1 :], record["input"])
        except InputError as exc:
            record.update(status=FAILED, output=names.output, error=str(exc))
            continue
        try:
            upload_file(names.archives[key], key)
        except (MzPeakDaskError, OSError) as exc:
            record.update(status=FAILED, error=str(exc).splitlines()[0])
        except BaseException:
            for left in waiting[n:]:
                if left["status"] == CONVERTED:
                    left.update(status=PENDING, error="interrupted before its upload")
            raise


def _reports(local_out: Path, output: str, outcome: BatchOutcome, batch: BatchOptions) -> None:
    """The reports of the whole batch, naming URLs, under the output prefix."""
    local_out.mkdir(parents=True, exist_ok=True)
    names = [
        report.write_json(local_out, outcome.records, outcome.seconds, outcome.interrupted).name
    ]
    if batch.reports:
        names.append(report.write_html(local_out, outcome.records, outcome.seconds).name)
        catalog = local_out / report.CATALOG
        _catalog(catalog, outcome.records)
        names.append(catalog.name)
    for name in names:
        upload_file(local_out / name, join(output, name))


def _catalog(path: Path, records: list[dict[str, Any]]) -> None:
    """One row per archive, read from the bucket (its metadata members only)."""
    done = [r for r in records if r["status"] in (CONVERTED, SKIPPED)]
    rows = [row for r in done for row in [report.catalog_row(r)] if row is not None]
    pq.write_table(pa.Table.from_pylist(rows, schema=report.CATALOG_SCHEMA), path)


def _load(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _save(path: Path, state: dict[str, Any]) -> None:
    """Write the state whole or not at all (the previous one kept if it cannot be), readable
    by its owner only, every URL's password hidden; one line naming it if it cannot be."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with owner_only(tmp) as f:
            f.write(json.dumps(_redacted(state), indent=1, default=str).encode())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        why = exc.strerror or str(exc)
        raise OutputError(
            f"{path}: cannot save the batch state ({why}); it holds the batches before this one"
        ) from None


def _redacted(value: Any) -> Any:
    """``value`` (JSON-like) with every URL's password hidden, in keys and strings."""
    if isinstance(value, dict):
        return {redact(k): _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    return redact(value) if isinstance(value, str) else value


__all__ = ["default_state_dir", "list_inputs", "run_remote_batch"]
