"""A Dask scheduler's address checked before connecting: a host name that does not resolve
is refused at once, where a client would retry it until its start deadline."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from ..errors import ClusterError


def check_resolves(address: str) -> None:
    """Refuse at once a scheduler whose host name does not resolve."""
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if parts.scheme not in ("tcp", "tls") or not parts.hostname:
        return  # another kind of address: the client says what is wrong with it
    try:
        socket.getaddrinfo(parts.hostname, None)
    except socket.gaierror as exc:
        raise ClusterError(
            f"cannot reach the Dask scheduler {address}: its host {parts.hostname} does not "
            f"resolve ({exc.strerror})"
        ) from None


__all__ = ["check_resolves"]
