"""An output's store asked, before any work, whether it can take the archive.

A conversion into a bucket that does not exist, with credentials the store refuses, or to an
endpoint that does not answer would otherwise convert the whole run and only fail at its
upload. One cheap request first (a HEAD of the bucket on S3, the bucket's or container's
metadata elsewhere) makes each of these one line naming the URL and the cause, before any
input is read or any worker started.
"""

from __future__ import annotations

from ..errors import MzPeakDaskError, StorageError
from .failures import cause
from .urls import check_writable, filesystem, scheme


def bucket_of(url: str) -> str:
    """``scheme://bucket`` of an object store URL (what :func:`probe_output` asks about)."""
    name, _, rest = url.partition("://")
    return f"{name.lower()}://{rest.split('/', 1)[0]}"


def probe_output(url: str) -> None:
    """Refuse the output ``url`` now (one line naming it and the cause) when its store is
    read-only, does not answer, has no such bucket or refuses these credentials."""
    check_writable(url)
    name = scheme(url)
    fs, path = filesystem(url)
    bucket = path.split("/", 1)[0]
    missing = f"{'container' if name in ('az', 'abfs', 'abfss') else 'bucket'} does not exist"
    try:
        if name in ("s3", "s3a"):
            fs.call_s3("head_bucket", Bucket=bucket)  # botocore's retries, no more: in seconds
        elif not fs.exists(bucket):
            raise StorageError(f"{url}: {missing}")
    except MzPeakDaskError:
        raise
    except Exception as exc:  # every client has its own errors; a user needs one line
        raise StorageError(f"{url}: {cause(exc, missing)}") from None


def exists(url: str) -> bool:
    """Whether an object is at ``url`` (one line naming it if the store cannot say)."""
    fs, path = filesystem(url)
    try:
        return bool(fs.exists(path))
    except MzPeakDaskError:  # already one line (a store that gave no answer in time)
        raise
    except Exception as exc:  # noqa: BLE001 - see above
        raise StorageError(f"{url}: {cause(exc)}") from None


__all__ = ["bucket_of", "exists", "probe_output"]
