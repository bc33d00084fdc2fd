"""What went wrong with a request to an object store, as the few words a user acts on.

Every client raises its own errors (botocore's, aiohttp's, s3fs' translations of them into
builtin ones, the Azure SDK's), often several deep and several lines long. :func:`cause` reads
the chain and names the cause a user can do something about: a bucket that does not exist,
credentials refused, an endpoint that does not answer (named, without the object's path), a
server failing or asking to slow down. :func:`transient` tells the failures worth sending a
request again for from those that fail again the same way.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from urllib.parse import urlsplit

DENIED = {
    "AccessDenied",
    "AllAccessDisabled",
    "AuthenticationFailed",
    "AuthorizationFailure",
    "ExpiredToken",
    "Forbidden",
    "InvalidAccessKeyId",
    "InvalidToken",
    "SignatureDoesNotMatch",
    "403",
}
NO_BUCKET = {"NoSuchBucket", "ContainerNotFound"}
NO_OBJECT = {"NoSuchKey", "NotFound", "BlobNotFound", "404"}
THROTTLED = {"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "503"}
TIMED_OUT = {"RequestTimeout", "RequestTimeTooSkewed"}


def chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling, outermost first."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _answer(exc: BaseException) -> tuple[str | None, int | None, str]:
    """The error code, HTTP status and message of a store's answer in the chain, if any."""
    for e in chain(exc):
        response = getattr(e, "response", None)
        if isinstance(response, dict) and ("Error" in response or "ResponseMetadata" in response):
            error = response.get("Error", {})
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            return error.get("Code"), status, str(error.get("Message") or "")
        status = getattr(e, "status_code", None) or getattr(e, "status", None)
        if isinstance(status, int) and 400 <= status < 600:  # the Azure SDK, aiohttp
            code = getattr(e, "error_code", None)
            return (str(code) if code else str(status)), status, _first_line(e)
    return None, None, ""


def _endpoint(exc: BaseException) -> str | None:
    """The scheme, host and port the failed connection was to, if the chain says."""
    for e in chain(exc):
        url = (getattr(e, "kwargs", None) or {}).get("endpoint_url")
        if isinstance(url, str) and "://" in url:
            parts = urlsplit(url)
            return f"{parts.scheme}://{parts.netloc}"
        host, port = getattr(e, "host", None), getattr(e, "port", None)
        if isinstance(host, str) and isinstance(port, int):  # aiohttp's connection errors
            secure = getattr(getattr(e, "_conn_key", None), "is_ssl", False)
            return f"{'https' if secure else 'http'}://{host}:{port}"
    return None


def _connection(exc: BaseException) -> str | None:
    """Why no connection was made or kept (refused, timed out, closed...), or None."""
    names = {type(e).__name__ for e in chain(exc)}
    for e in chain(exc):
        if isinstance(e, ConnectionRefusedError) or getattr(e, "errno", None) == errno.ECONNREFUSED:
            return "connection refused"
    text = " ".join(_first_line(e) for e in chain(exc)).lower()
    if "connection refused" in text or "connect call failed" in text:
        return "connection refused"
    if names & {"ConnectTimeoutError", "ServerTimeoutError", "ConnectionTimeoutError"}:
        return "timed out"
    if names & {"ReadTimeoutError", "TimeoutError", "FSTimeoutError"}:
        return "no answer in time"
    if names & {"ConnectionClosedError", "ServerDisconnectedError", "ClientPayloadError"}:
        return "connection closed by the server"
    if names & {"ConnectionResetError", "BrokenPipeError", "ClientOSError"}:
        return "connection reset"
    if "name or service not known" in text or "nodename nor servname" in text:
        return "host name not found"
    if names & {"EndpointConnectionError", "ClientConnectorError", "ServiceRequestError"}:
        return "no connection"
    return None


def cause(exc: BaseException, missing: str = "no such object") -> str:
    """The cause of ``exc`` in a few words, without the URL (the caller names it);
    ``missing``: what a 404 answer means for the request made."""
    code, status, message = _answer(exc)
    if code in NO_BUCKET or ("bucket" in message.lower() and "not exist" in message.lower()):
        return "bucket does not exist"
    if code in DENIED or status == 403:
        return "access denied (check credentials)"
    if code in NO_OBJECT or status == 404:
        return missing
    if code in THROTTLED or status == 503:
        return f"the server asks to slow down ({code or status}); gave up after retrying"
    if status is not None and status >= 500:
        return f"server error ({status} {code}); gave up after retrying"
    reason = _connection(exc)  # before the builtin errors a client may raise it as
    if reason is not None:
        where = _endpoint(exc)
        return f"cannot connect to {where} ({reason})" if where else reason
    if isinstance(exc, PermissionError):
        return "access denied (check credentials)"
    if isinstance(exc, FileNotFoundError):
        return missing
    if code is not None:
        return f"{code}: {message}" if message else str(code)
    text = _first_line(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def transient(exc: BaseException) -> bool:
    """Whether sending the request again may succeed: a connection that failed, a server
    error or a request to slow down; not a refusal (missing, denied, malformed)."""
    code, status, _ = _answer(exc)
    if status is not None or code is not None:
        return (status is not None and status >= 500) or code in THROTTLED or code in TIMED_OUT
    if isinstance(exc, (PermissionError, FileNotFoundError, FileExistsError)):
        return False
    return _connection(exc) is not None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else ""


__all__ = ["cause", "chain", "transient"]
