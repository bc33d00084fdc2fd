"""Object storage and web servers: URLs, the fsspec filesystem of each, range reads, uploads."""

from .ranges import RangeSource, Transfer
from .urls import basename, filesystem, is_url, join, local_path, scheme, set_default_options

__all__ = [
    "RangeSource",
    "Transfer",
    "basename",
    "filesystem",
    "is_url",
    "join",
    "local_path",
    "scheme",
    "set_default_options",
]
