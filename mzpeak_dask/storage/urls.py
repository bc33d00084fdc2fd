"""URLs of object stores and web servers, and the fsspec filesystem that reads each.

Plain paths (and ``file://`` URLs, turned back into paths) never reach fsspec: local files keep
their memory maps and their speed. ``s3://``, ``gs://`` (``gcs://``), ``az://`` (``abfs://``)
and ``http(s)://`` go through fsspec, one layer for every store; each store's client is an
optional extra, and a URL whose client is missing is one line naming the extra to install.

Credentials and endpoints come from each store's own environment (for S3 ``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``); anything else is a
storage option: the keyword arguments of the store's fsspec filesystem, given as JSON with
``--storage-options`` or in the config's ``[storage]`` table (:func:`set_default_options`).
"""

from __future__ import annotations

import copy
import json
import os
import re
import threading
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import ExtraMissingError, StorageError
from ..support.pathtext import redact
from .deadline import bounded
from .web import ranges_only

# scheme -> (the optional extra that installs its client, the client's module)
EXTRAS = {
    "s3": ("s3", "s3fs"),
    "s3a": ("s3", "s3fs"),
    "gs": ("gcs", "gcsfs"),
    "gcs": ("gcs", "gcsfs"),
    "az": ("azure", "adlfs"),
    "abfs": ("azure", "adlfs"),
    "abfss": ("azure", "adlfs"),
    "http": ("http", "aiohttp"),
    "https": ("http", "aiohttp"),
}
READ_ONLY = ("http", "https")
LISTED = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss")  # stores listed by prefix
# botocore's settings for S3 unless the storage options (their ``config_kwargs``) say: a
# connection that does not come or answer is given up in seconds, and each request is tried
# three times (the "standard" mode: connection failures, 5xx answers and SlowDown, with a
# random backoff of 1 s, then 2 s at most), where the legacy default tries five times
S3_CONFIG = {"connect_timeout": 5, "read_timeout": 30}
S3_RETRIES = {"max_attempts": 2, "mode": "standard"}  # retries: 3 calls in all
ENVIRONMENT = "MZPEAK_DASK_STORAGE_OPTIONS"  # how worker processes inherit the options


_filesystems: dict[tuple[str, str], Any] = {}
_retired: list[Any] = []  # filesystems of options since replaced (fsspec still holds them)
_lock = threading.Lock()


def scheme(location: str | os.PathLike) -> str | None:
    """The URL scheme of ``location`` (``s3``, ``https``, ``file``...), None for a plain path."""
    if not isinstance(location, str):
        return None
    head, sep, _ = location.partition("://")
    if not sep or not head or not head.replace("+", "").isalnum():
        return None
    return head.lower()


def is_url(location: str | os.PathLike) -> bool:
    """Whether ``location`` is a remote URL (anything but a plain path or a ``file://`` URL)."""
    return scheme(location) not in (None, "file")


def local_path(location: str | os.PathLike) -> str | os.PathLike:
    """A ``file://`` URL as its path; anything else unchanged."""
    if scheme(location) == "file":
        return unquote(urlsplit(str(location)).path)
    return location


def check_writable(url: str) -> None:
    """Refuse an output on a read-only store (a web server)."""
    if scheme(url) in READ_ONLY:
        raise StorageError(f"{url}: {scheme(url)}:// URLs are read-only; write to a path or bucket")


def set_default_options(options: dict[str, Any] | None) -> None:
    """The storage options of this process and of the worker processes it starts (they
    inherit them through the environment variable ``MZPEAK_DASK_STORAGE_OPTIONS``)."""
    if options:
        os.environ[ENVIRONMENT] = json.dumps(options, sort_keys=True)
    else:
        os.environ.pop(ENVIRONMENT, None)
    with _lock:
        _retired.extend(_filesystems.values())
        _filesystems.clear()


def default_options() -> dict[str, Any]:
    text = os.environ.get(ENVIRONMENT)
    if not text:
        return {}
    try:
        options = json.loads(text)
    except ValueError:
        raise StorageError(f"{ENVIRONMENT} is not a JSON object") from None
    if not isinstance(options, dict):
        raise StorageError(f"{ENVIRONMENT} is not a JSON object")
    return options


def filesystem(url: str, options: dict[str, Any] | None = None) -> tuple[Any, str]:
    """The fsspec filesystem that reads ``url`` and the path inside it (one filesystem per
    scheme and options, kept for the process: its connections are reused)."""
    name = scheme(url)
    if name is None or name == "file":
        raise StorageError(f"{url}: not a URL")
    if name not in READ_ONLY and _SAME_STORE.get(name, name) != "az" and "@" in _netloc(url):
        raise StorageError(  # the client would take it for the bucket's name, and show it
            f"{redact(url)}: a {name}:// URL cannot carry credentials; give them in the "
            "store's environment or the config file's [storage] table"
        )
    options = with_defaults(name, default_options() if options is None else options)
    key = (name, json.dumps(options, sort_keys=True, default=str))
    try:
        import fsspec
    except ImportError:
        raise ExtraMissingError(_hint(url, name)) from None
    with _lock:
        fs = _filesystems.get(key)
    if fs is None:  # (fsspec's own cache may give back the one made before for the options)
        try:
            cls = fsspec.get_filesystem_class(name)
            fs = cls(**options)
        except ImportError:
            raise ExtraMissingError(_hint(url, name)) from None
        except ValueError as exc:
            if "Protocol not known" in str(exc):
                raise StorageError(f"{url}: unsupported URL scheme {name}://") from None
            raise StorageError(f"{url}: {exc}") from None
        except TypeError as exc:
            raise StorageError(f"{url}: storage options not accepted ({exc})") from None
        if name in READ_ONLY:  # a web server: ranged reads refuse a whole-file answer
            fs = ranges_only(fs)
        fs = bounded(fs)  # every blocking call of it given up after the deadline
        with _lock:
            _filesystems[key] = fs
    return fs, fs._strip_protocol(url) if name not in READ_ONLY else url


def with_defaults(name: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with this package's defaults for the store of scheme ``name`` filled in
    where they say nothing (for S3, botocore's timeouts and retries: :data:`S3_CONFIG`)."""
    if name not in ("s3", "s3a"):
        return options
    # copies: botocore rewrites the retries it is given in place
    config = {**S3_CONFIG, **copy.deepcopy(options.get("config_kwargs", {}))}
    if not {"AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE"} & os.environ.keys():  # else as they say
        config.setdefault("retries", dict(S3_RETRIES))
    return {**options, "config_kwargs": config}


def _hint(url: str, name: str) -> str:
    extra, module = EXTRAS.get(name, (None, None))
    if extra is None:
        return f"{url}: no client for {name}:// URLs is installed"
    return f"{url}: {name}:// URLs need the {module} package: pip install 'mzpeak-dask[{extra}]'"


_SAME_STORE = {"s3a": "s3", "gcs": "gs", "abfs": "az", "abfss": "az"}
# AWS's own names of a bucket's objects: virtual-hosted (``<bucket>.s3[.<region>].amazonaws.com``,
# ``<bucket>.s3-<region>...``) and path-style (``s3[.<region>].amazonaws.com/<bucket>/...``)
_AWS_HOST = re.compile(r"(?:(?P<bucket>.+)\.)?s3(?:[.-][a-z0-9-]+)*\.amazonaws\.com(?:\.cn)?")
_DEFAULT_PORTS = (None, 80, 443)


def object_identity(
    location: str | os.PathLike, options: dict[str, Any] | None = None
) -> tuple[str, ...]:
    """What ``location`` names, the same for every spelling of one object or file: two
    locations whose identities are equal may be the same object, and an output must not be
    written over an input so named.

    A path or ``file://`` URL: ``("file", real path)``. An object in a store:
    ``(store, bucket, key)``, whatever the scheme's alias (``s3a://``, ``gcs://``,
    ``abfs://``), the password in the URL, doubled slashes, ``.`` and ``..`` segments and a
    trailing slash (stores and clients do not agree on such keys: spellings any of them
    reads as the same object count as one). An ``http(s)://`` URL of S3 is that S3 object:
    path-style or virtual-hosted on the S3 endpoint (``AWS_ENDPOINT_URL``, the storage
    option ``endpoint_url``) or on AWS's own hosts (``<bucket>.s3.amazonaws.com/<key>``,
    ``s3.<region>.amazonaws.com/<bucket>/<key>``); any other is ``("web", host, port, path)``.
    ``options``: the storage options (default: this process' own)."""
    name = scheme(location)
    if name in (None, "file"):
        return ("file", os.path.realpath(os.fspath(local_path(location))))
    location = str(location)
    if name in READ_ONLY:
        parts = urlsplit(location)
        host, path = _host(parts), _key(unquote(parts.path))
        return _s3_spelling(host, path, options) or ("web", *map(str, host), path)
    netloc, path = _netloc(location), location.split("://", 1)[1].partition("/")[2]
    store = _SAME_STORE.get(name, name)
    # userinfo never names the object; Azure's ``container@account`` names the container
    bucket = netloc.partition("@")[0] if store == "az" else netloc.rpartition("@")[2]
    return (store, bucket.lower(), _key(path.partition("?")[0] if store == "s3" else path))


def _netloc(url: str) -> str:
    return url.split("://", 1)[1].partition("/")[0]


def _key(path: str) -> str:
    """A key or URL path with empty and ``.`` segments dropped and ``..`` taken back."""
    segments: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if segments:
                segments.pop()
        elif segment not in ("", "."):
            segments.append(segment)
    return "/".join(segments)


def _host(parts: Any) -> tuple[str, int | None]:
    try:
        port = parts.port
    except ValueError:  # not a number: never the endpoint's
        port = -1
    return (parts.hostname or "").lower().rstrip("."), port


def _same_host(a: tuple[str, int | None], b: tuple[str, int | None]) -> bool:
    """The same host and port (a port left out, or a scheme's default, is either default)."""
    return a[0] == b[0] and (a[1] == b[1] or (a[1] in _DEFAULT_PORTS and b[1] in _DEFAULT_PORTS))


def _s3_endpoints(options: dict[str, Any] | None) -> list[tuple[str, int | None]]:
    options = default_options() if options is None else options
    client = options.get("client_kwargs")
    given = [
        os.environ.get("AWS_ENDPOINT_URL_S3"),
        os.environ.get("AWS_ENDPOINT_URL"),
        options.get("endpoint_url"),
        client.get("endpoint_url") if isinstance(client, dict) else None,
    ]
    return [_host(urlsplit(url)) for url in given if isinstance(url, str) and "://" in url]


def _s3_spelling(
    host: tuple[str, int | None], path: str, options: dict[str, Any] | None
) -> tuple[str, ...] | None:
    """``("s3", bucket, key)`` of an ``http(s)://`` URL of an S3 object, else None."""
    first, _, rest = path.partition("/")
    name = host[0]
    for endpoint in _s3_endpoints(options):
        if _same_host(host, endpoint):  # path-style
            return ("s3", first.lower(), rest)
        virtual = name.endswith("." + endpoint[0]) and not endpoint[0].replace(".", "").isdigit()
        if virtual and _same_host((endpoint[0], host[1]), endpoint):
            return ("s3", name[: -len(endpoint[0]) - 1], path)
    aws = _AWS_HOST.fullmatch(name)
    if aws is None:
        return None
    return ("s3", aws["bucket"], path) if aws["bucket"] else ("s3", first.lower(), rest)


def without_userinfo(location: str) -> str:
    """``location`` (a URL, or one without its scheme: ``user:password@host/path``) without
    the userinfo before its host: a name made of it (a key, a folder) keeps no password."""
    head, sep, rest = location.partition("://")
    if not sep:
        head, rest = "", location
    netloc, slash, path = rest.partition("/")
    return f"{head}{sep}{netloc.rpartition('@')[2]}{slash}{path}"


def join(url: str, *names: str) -> str:
    """``url`` with ``names`` appended as path segments."""
    return "/".join([url.rstrip("/"), *(n.strip("/") for n in names)])


def basename(location: str | os.PathLike) -> str:
    """The last path segment of a path or URL."""
    if is_url(location):
        return str(location).rstrip("/").rsplit("/", 1)[-1]
    return os.path.basename(os.fspath(location).rstrip("/"))


__all__ = [
    "LISTED",
    "basename",
    "check_writable",
    "default_options",
    "filesystem",
    "is_url",
    "join",
    "local_path",
    "object_identity",
    "redact",
    "scheme",
    "set_default_options",
    "with_defaults",
    "without_userinfo",
]
