"""Ranged reads from web servers (fsspec's HTTP filesystem).

Archives and inputs are read by byte range. A server that ignores the Range header answers
with the whole file (Python's ``http.server``, some static hosts), and fsspec's ``cat_file``
reads that body into memory whatever its size: every read of a run would bring the whole
file. :func:`ranges_only` makes a filesystem's ranged reads (``cat_file`` and, through it,
``cat_ranges``) look at the answer's status first and refuse a whole-file answer, its body
unread, in one line.
"""

from __future__ import annotations

from typing import Any

from ..errors import StorageError
from ..support.pathtext import redact


async def http_get(fs: Any, url: str, header: str) -> tuple[int, str | None, bytes]:
    """``(status, Content-Range, body)`` of a ranged GET; the body only of a ranged answer
    (206), an error raised as fsspec raises it (404: FileNotFoundError)."""
    options = fs.kwargs.copy()
    options["headers"] = {**options.get("headers", {}), "Range": header}
    session = await fs.set_session()
    async with session.get(fs.encode_url(url), **options) as answer:
        fs._raise_not_found_for_status(answer, url)
        if answer.status != 206:  # not a ranged answer: its body left unread
            return answer.status, None, b""
        return 206, answer.headers.get("Content-Range"), await answer.read()


def ranges_only(fs: Any) -> Any:
    """``fs`` (an HTTP filesystem) whose ranged reads refuse a whole-file answer (call before
    :func:`~.deadline.bounded`, which wraps the coroutine found on the instance)."""
    whole = fs._cat_file

    async def cat_file(url: str, start: int | None = None, end: int | None = None, **kwargs):
        if start is None and end is None:
            return await whole(url, **kwargs)
        if start == end:
            return b""
        header = await fs._process_limits(url, start, end)
        status, _, data = await http_get(fs, url, header)
        if status != 206:
            raise StorageError(
                f"{redact(url)}: the web server does not serve byte ranges (it answered a "
                "ranged GET with the whole file); serve the file from one that does (S3, GCS, "
                "Azure, nginx and Apache do), or copy it here first"
            )
        return data

    fs._cat_file = cat_file
    return fs


__all__ = ["http_get", "ranges_only"]
