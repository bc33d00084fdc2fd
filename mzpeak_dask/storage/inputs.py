"""Inputs read where they lie: an uncompressed mzML, MGF, mzXML or mzMLb object in a bucket or
on a web server is surveyed and read by byte ranges, by whichever process needs them (the
survey where the run is planned, each partition's bytes on the worker that parses it), never
copied whole.

A job keeps a local path for its input (:mod:`mzpeak_dask.transfer.staged`): for an input read by
ranges nothing is written at that path, only the origin marker beside it
(:mod:`.origins`), which names the URL. :func:`remote_input` turns such a path back into its
URL; the readers, the input's size and its SHA-256 then read the object.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import InputError, StorageError
from .failures import cause
from .origins import origin_of
from .ranges import TOTAL, RangeFile, RangeSource, fetch, fetch_many, fetch_sized
from .urls import filesystem, is_url

SURVEY_READ_AHEAD = 1 << 18  # a survey's reads fetch at least this much (a header, a scan)
MERGE_GAP = 1 << 16  # sampled spans closer than this are fetched in one request
HASH_BLOCK = 16 << 20  # one ranged GET per block when the input's digest streams the object
RANGE_FORMATS = ("mzML", "MGF", "mzXML", "mzMLb")  # read by ranges; compressed ones are staged


def remote_input(path: str | os.PathLike) -> str | None:
    """The URL of an input read by ranges whose job path is ``path``, else None."""
    if isinstance(path, str) and is_url(path):
        return path
    local = Path(path)
    if local.exists():
        return None  # a staged copy (or a plain local file)
    return origin_of(local)


_KINDS = (  # the files that are not regular, as a message names them
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def check_regular_file(path: str | os.PathLike, name: str | None = None) -> None:
    """Refuse a local input that is not a regular file, by its ``stat`` (links followed),
    before anything opens it: opening a FIFO for reading waits for a writer forever, and a
    device like ``/dev/zero`` never ends. Errors call it ``name`` (default ``path``)."""
    shown = path if name is None else name
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(f"{shown}: no such file") from None
    except OSError as exc:
        raise InputError(f"{shown}: cannot read ({exc.strerror})") from None
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode) and is_vendor_folder(path):
        return
    if stat.S_ISDIR(mode):
        raise InputError(f"{shown}: is a directory, not an MS data file")
    kind = next((what for test, what in _KINDS if test(mode)), "a special file")
    raise InputError(f"{shown}: not a regular file ({kind}), not an MS data file")


_sizes: dict[str, int] = {}  # the sizes asked while a conversion holds them
_holders = 0
_sizes_lock = threading.Lock()


@contextmanager
def sizes_held() -> Iterator[None]:
    """Within the block, each object's size is asked of the store once: a conversion looks
    at it several times (compression, format, survey, hash, result), one request each
    otherwise. Outside every such block each call asks again (an object may be replaced)."""
    global _holders
    with _sizes_lock:
        _holders += 1
    try:
        yield
    finally:
        with _sizes_lock:
            _holders -= 1
            if not _holders:  # an object may be replaced once the call is over
                _sizes.clear()
                _heads.clear()


def size_of(url: str) -> int:
    """The object's size in bytes (one line naming the URL if it is missing)."""
    known = _sizes.get(url)
    if known is not None:
        return known
    size = _ask_size(url)
    with _sizes_lock:
        if _holders:
            _sizes[url] = size
    return size


def _ask_size(url: str) -> int:
    fs, path = filesystem(url)
    try:
        return int(fs.size(path))
    except StorageError:  # the store gave no answer in time (already one line)
        raise
    except Exception as exc:  # every client has its own errors; a user needs one line
        what = cause(exc)
        raise (InputError if what == "no such object" else StorageError)(f"{url}: {what}") from None


VENDOR_FOLDER_MARKER = "analysis.tdf"


def is_vendor_folder(path: str | os.PathLike) -> bool:
    """A local folder that is one input: a Bruker timsTOF ``.d`` (it holds ``analysis.tdf``)."""
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, VENDOR_FOLDER_MARKER))


def vendor_files(path: str | os.PathLike) -> list[str]:
    """The files of a vendor folder that make the input: those directly in it, by name."""
    return sorted(e.path for e in os.scandir(path) if e.is_file())


def input_size(path: str | os.PathLike) -> int:
    """Bytes of an input: a local file's, the object's for one read by ranges, or the files
    directly in a vendor folder."""
    url = remote_input(path)
    if url:
        return size_of(url)
    if os.path.isdir(path):
        return sum(os.stat(name).st_size for name in vendor_files(path))
    return os.stat(path).st_size


_ahead = threading.local()  # url -> [(start, bytes)] fetched ahead on this thread
_surveyed = threading.local()  # url -> the RangeSource of the survey under way on this thread


def read_range(url: str, start: int, stop: int) -> bytes:
    """Bytes ``[start, stop)`` of the object at ``url``, in one ranged request (or from the
    spans :func:`ranges_ahead` fetched, or the cache of the survey under way)."""
    held = _piece(getattr(_ahead, "spans", {}).get(url, []), start, stop)
    if held is not None:
        return held
    source = getattr(_surveyed, "sources", {}).get(url)
    if source is not None:
        return source.read(start, stop - start)
    fs, path = filesystem(url)
    return fetch(fs, path, start, stop, url, TOTAL)


def _piece(known: list[tuple[int, bytes]], start: int, stop: int) -> bytes | None:
    """Bytes ``[start, stop)`` when one of the ``(offset, bytes)`` in ``known`` holds them."""
    for offset, data in known:
        if offset <= start and stop <= offset + len(data):
            return data[start - offset : stop - offset]
    return None


@contextmanager
def surveying(url: str | None) -> Iterator[None]:
    """Within the block (a run's plan, on this thread), every read of ``url`` goes through
    one :class:`RangeSource` and its cache: the bytes the survey fetched (the head, the tail
    and index, the items whose offsets it checked) serve the detection and the sample the
    plan reads next, without a request of their own."""
    if url is None:
        yield
        return
    sources = _surveyed.__dict__.setdefault("sources", {})
    mine = url not in sources
    with sizes_held():
        if mine:
            sources[url] = _new_source(url)
        try:
            yield
        finally:
            if mine:
                sources.pop(url)


def sample_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The byte spans a plan fetches for its sampled items: spans less than
    :data:`MERGE_GAP` apart fetched as one."""
    merged: list[tuple[int, int]] = []
    for a, b in sorted((int(a), int(b)) for a, b in spans if b > a):
        if merged and a <= merged[-1][1] + MERGE_GAP:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


@contextmanager
def ranges_ahead(url: str, spans: list[tuple[int, int]]) -> Iterator[None]:
    """Within the block, :func:`read_range` of ``url`` at these spans returns bytes fetched
    side by side on entering it (one round trip for the sample spectra a plan reads, not
    one each). A span that fails is left to be read, and to fail, on its own."""
    spans = [(a, b) for a, b in spans if b > a]
    source = getattr(_surveyed, "sources", {}).get(url)
    if source is not None:  # the survey's cache: what it lacks, fetched side by side
        source.prefetch_many(spans)
        yield
        return
    if len(spans) < 2:
        yield
        return
    fs, path = filesystem(url)
    parts = fetch_many(fs, path, spans, TOTAL)
    _ahead.spans = {url: [(s[0], d) for s, d in zip(spans, parts, strict=True) if d is not None]}
    try:
        yield
    finally:
        _ahead.spans = {}


def range_source(url: str) -> RangeSource:
    """The whole object as a :class:`RangeSource` with a read-ahead fit for surveying it (the
    survey's own, within :func:`surveying`)."""
    source = getattr(_surveyed, "sources", {}).get(url)
    return source if source is not None else _new_source(url)


def range_file(url: str) -> RangeFile:
    """The whole object as a seekable read-only file whose reads are ranged GETs through a
    read-ahead cache (an HDF5 library reads mzMLb so: its superblock, B-trees and the chunks
    a partition needs, never the whole object)."""
    return RangeFile(range_source(url))


def _new_source(url: str) -> RangeSource:
    fs, path = filesystem(url)
    size, tail = _first_look(url, survey=True)
    source = RangeSource(fs, path, 0, size, url, TOTAL, read_ahead=SURVEY_READ_AHEAD, tail=True)
    with _sizes_lock:
        head = _heads.get((url, size))
    if head is not None:  # the first bytes the detection fetched: the survey reads them too
        source.hold(0, head)
    if tail is not None:  # the last ones, with an index, fetched beside them
        source.hold(size - len(tail), tail)
    return source


_heads: OrderedDict[tuple[str, int], bytes] = OrderedDict()  # (url, size) -> first bytes


def object_head(url: str) -> bytes:
    """The object's first bytes (a survey's read-ahead), in one ranged request, kept for the
    last 16 objects while a call holds their sizes (:func:`sizes_held`): a conversion looks at
    them several times (compression, format, before and in the plan, and the survey its
    header). The next call fetches them again: the object may have been replaced."""
    key = (url, _first_look(url)[0])
    with _sizes_lock:
        head = _heads.get(key)
        if head is not None:
            _heads.move_to_end(key)
            return head
    head = read_range(url, 0, min(SURVEY_READ_AHEAD, key[1]))
    _keep_head(key, head)
    return head


def _keep_head(key: tuple[str, int], head: bytes) -> None:
    with _sizes_lock:
        if not _holders:  # no call holds it: the next look asks the store again
            return
        _heads[key] = head
        _heads.move_to_end(key)
        while len(_heads) > 16:
            _heads.popitem(last=False)


def _first_look(url: str, survey: bool = False) -> tuple[int, bytes | None]:
    """The object's size and, for a ``survey``, its tail when fetched here (else None).
    Asked first within a conversion (:func:`sizes_held`), the size comes with the object's
    head (kept for the detection and the survey), fetched by a ranged GET whose answer says
    the size, and, for a survey, with its tail with the index, fetched beside it: one round
    trip where a HEAD, the head and the tail took three. A store whose client does not show
    those answers is asked the size by a HEAD."""
    if url in _sizes or not _holders:
        return size_of(url), None
    with _sizes_lock:
        seen = any(u == url for u, _ in _heads)  # its head kept: only the tail would say it
    spans = [] if seen else [(0, SURVEY_READ_AHEAD)]
    spans += [(None, SURVEY_READ_AHEAD)] if survey else []
    fs, path = filesystem(url)
    answer = fetch_sized(fs, path, spans, TOTAL) if spans else None
    if answer is None:
        return size_of(url), None
    size, parts = answer
    with _sizes_lock:
        if _holders:
            _sizes[url] = size
    if not seen:
        _keep_head((url, size), parts[0])
    return size, parts[-1] if survey else None


def url_sha256(url: str) -> str:
    """SHA-256 of the object, streamed once by consecutive ranged reads (nothing on disk)."""
    size, digest = size_of(url), hashlib.sha256()
    for start in range(0, size, HASH_BLOCK):
        digest.update(read_range(url, start, min(size, start + HASH_BLOCK)))
    return digest.hexdigest()


__all__ = [
    "RANGE_FORMATS",
    "check_regular_file",
    "range_file",
    "input_size",
    "is_vendor_folder",
    "vendor_files",
    "object_head",
    "range_source",
    "ranges_ahead",
    "read_range",
    "remote_input",
    "sample_spans",
    "size_of",
    "sizes_held",
    "surveying",
    "url_sha256",
]
