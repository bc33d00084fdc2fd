"""Storage options given on the command line, hidden from other users of the machine.

A process' command line is readable by every user (``ps``, ``/proc/PID/cmdline``). The options
(credentials, often) reach the workers through the environment (``MZPEAK_DASK_STORAGE_OPTIONS``,
readable by their owner only), never a command line (the workers of a LocalCluster are spawned
with a command line of their own); and the value of ``--storage-options`` is overwritten with
``*`` in this process' own command line as it starts (Linux: the bytes ``/proc/self/stat``
places them at). Until then, and on other systems, the value shows: secrets belong in the
config file's ``[storage]`` table or in the store's environment.
"""

from __future__ import annotations

import ctypes
import sys

FLAG = b"--storage-options"
SHORTEST = len(b"--sto")  # argparse takes any unambiguous prefix of a flag


def _is_flag(token: bytes) -> bool:
    return len(token) >= SHORTEST and FLAG.startswith(token)


def masked(command_line: bytes) -> bytes:
    """``command_line`` (its arguments, each ended by a NUL) with the value of every
    ``--storage-options`` (or a prefix of it) overwritten with ``*``, its length kept."""
    tokens = command_line.split(b"\0")
    for k, token in enumerate(tokens):
        name, equals, value = token.partition(b"=")
        if equals and _is_flag(name):
            tokens[k] = name + equals + b"*" * len(value)
        elif _is_flag(token) and k + 1 < len(tokens):
            tokens[k + 1] = b"*" * len(tokens[k + 1])
    return b"\0".join(tokens)


def hide_storage_options() -> bool:
    """Overwrite the value of ``--storage-options`` in this process' command line as the
    system shows it; whether it was there and is now hidden."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rpartition(b")")[2].split()
        start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (fields 48, 49)
    except (OSError, ValueError, IndexError):
        return False
    if not 0 < start < end:
        return False
    shown = ctypes.string_at(start, end - start)
    hidden = masked(shown)
    if hidden == shown:
        return False
    ctypes.memmove(start, hidden, len(hidden))
    return True


__all__ = ["hide_storage_options", "masked"]
