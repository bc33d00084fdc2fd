"""Batches in object storage: every MS file under a prefix (recursively) or the URLs of a
manifest, converted into the same tree under an output prefix.

The batch's state stays local (``--state-dir``; by default a folder named after the output
prefix under ``~/.cache/mzpeak-dask/batches``): a JSON file of what each input was (ETag and
size) and its record. ``--resume`` leaves out inputs whose ETag and size are unchanged and
whose archive is at its key, without reading them. The others are run as an ordinary local
batch (validation, retries, failure isolation) over a local staging tree, where an uncompressed
mzML, MGF, mzXML or mzMLb input is only noted (its URL: the workers read it by ranges where it lies,
as ``convert`` does, :mod:`..staged`) and the others are streamed in; each archive is then
uploaded (:mod:`..storage.uploads`: only complete objects appear), and ``batch_report.json``,
``batch_report.html`` and ``catalog.parquet`` are written under the output prefix, naming the
URLs.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError, MzPeakDaskError, StorageError
from ..options import BatchOptions, ClusterOptions, ConvertOptions
from ..staged import by_ranges, download
from ..storage.origins import mark_origin
from ..storage.uploads import upload_file
from ..storage.urls import check_writable, filesystem, is_url, join, local_path
from . import report
from .runner import BatchOutcome, run_batch
from .sources import is_ms_file
from .state import CONVERTED, SKIPPED, STATE_FILE, BatchState

log = logging.getLogger(__name__)

STATE = "remote_state.json"


def default_state_dir(output: str) -> Path:
    """Where the state of a batch into ``output`` is kept unless ``--state-dir`` says."""
    key = hashlib.sha256(output.rstrip("/").encode()).hexdigest()[:16]
    return Path.home() / ".cache" / "mzpeak-dask" / "batches" / key


def list_inputs(source: str) -> list[tuple[str, str, str | None, int]]:
    """``(url, path under the prefix, ETag, size)`` of every MS file under a prefix, or of
    every URL of a manifest (a local file or a URL, one URL per line)."""
    if is_url(source) and source.rstrip("/").endswith((".txt", ".csv", ".tsv", ".manifest")):
        return _manifest(_read_text(source))
    if not is_url(source):
        return _manifest(Path(source).read_text())
    fs, path = filesystem(source)
    try:
        found = fs.find(path, detail=True)
    except StorageError:  # the store gave no answer in time (already one line)
        raise
    except Exception as exc:
        raise InputError(f"{source}: cannot list ({type(exc).__name__})") from None
    prefix = source.rstrip("/")
    out = []
    for key, info in sorted(found.items()):
        relative = key[len(path.rstrip("/")) :].lstrip("/")
        if info.get("type") == "file" and is_ms_file(Path(relative)):
            out.append((join(prefix, relative), relative, _etag(info), int(info.get("size") or 0)))
    return out


def _read_text(url: str) -> str:
    fs, path = filesystem(url)
    return fs.cat_file(path).decode()


def _manifest(text: str) -> list[tuple[str, str, str | None, int]]:
    urls = [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]
    out = []
    for url in dict.fromkeys(urls):
        fs, path = filesystem(url)
        info = fs.info(path)
        out.append((url, path.split("://", 1)[-1], _etag(info), int(info.get("size") or 0)))
    return out


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
    check_writable(output)
    work = Path(state_dir) if state_dir else default_state_dir(output)
    work.mkdir(parents=True, exist_ok=True)
    state = _load(work / STATE)
    listing = list_inputs(str(source))
    keep, todo = _resume(listing, state, output) if batch.resume else ({}, listing)
    staging = Path(tempfile.mkdtemp(prefix="batch-", dir=work))
    started = time.perf_counter()

    def finished(records: list[dict[str, Any]], interrupted: bool = False) -> BatchOutcome:
        """Keep what each input of ``records`` was and became (saved at once), and write the
        reports of the whole batch, the inputs a resume left out included."""
        by_input = {r["input"]: r for r in records}
        for url, _, etag, size in todo:
            if url in by_input:
                state[url] = {"etag": etag, "size": size, "record": by_input[url]}
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
        shutil.rmtree(staging, ignore_errors=True)
    return outcome


def _resume(listing, state, output) -> tuple[dict, list]:
    keep, todo = {}, []
    fs, _ = filesystem(output)
    for item in listing:
        url, _, etag, size = item
        entry = state.get(url)
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


def _convert(
    todo, staging, output, options, cluster, batch, client, progress, finished
) -> BatchOutcome:
    """The local batch of the inputs to do, its archives uploaded, its records naming URLs.
    A batch stopped early (Ctrl-C, SIGTERM at a wall-time limit) still uploads the archives
    finished before the stop and hands every record to ``finished`` (kept, so a resume skips
    them, and reported, the others as pending)."""
    mirror, local_out = staging / "in", staging / "out"
    mirror.mkdir()
    urls = {}
    for url, relative, _, _ in todo:
        target = mirror / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if by_ranges(url):  # read where it lies, by the workers' ranged reads: only noted
            mark_origin(target, url)
        else:  # compressed: streamed into the staging tree
            download(url, target)
        urls[str(target.resolve())] = url
    try:
        outcome = run_batch(
            mirror,
            local_out,
            options,
            cluster,
            batch.updated(resume=False),
            client=client,
            progress=progress,
        )
    except BaseException as exc:
        _keep_finished(local_out, urls, output, finished, isinstance(exc, KeyboardInterrupt))
        raise
    _publish(outcome.records, urls, local_out, output)
    return outcome


def _keep_finished(
    local_out: Path, urls: dict[str, str], output: str, finished, interrupted: bool
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
        _publish(records, urls, local_out, output)
        finished(records, interrupted)
    except Exception as exc:  # noqa: BLE001 - see above
        log.warning("%s: the archives finished before the stop were not kept (%s)", output, exc)


def _publish(
    records: list[dict[str, Any]], urls: dict[str, str], local_out: Path, output: str
) -> None:
    """Rewrite ``records`` to name URLs, uploading each converted archive to its key."""
    for record in records:
        local_archive, local_input = Path(record["output"]), record["input"]
        record["output"] = join(output, local_archive.relative_to(local_out).as_posix())
        record["input"] = urls.get(str(Path(local_input).resolve()), local_input)
        if record["status"] == CONVERTED:
            upload_file(local_archive, record["output"])
        if record.get("error"):  # the URLs, not the staged copies
            error = record["error"].replace(local_input, record["input"])
            record["error"] = error.replace(str(local_archive), record["output"])


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
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(state, indent=1, default=str))
    os.replace(tmp, path)


__all__ = ["default_state_dir", "list_inputs", "run_remote_batch"]
