"""The C heap of a process that encodes partitions: freed blocks kept for reuse (glibc).

Encoding a partition allocates and frees numpy temporaries of a few MB each (the spectra's
concatenated arrays and every pass over them). glibc's ``malloc`` serves a block above its mmap
threshold with pages fresh from the kernel and unmaps them on ``free``; the kernel zero-fills
every page again on its first touch (Dask's nanny makes it worse: it starts workers with
``MALLOC_TRIM_THRESHOLD_`` set, which pins that threshold at 128 KiB). With the mmap threshold
at 32 MiB (glibc's own ceiling for it) and the top of the heap trimmed only beyond 128 MiB
free, those blocks come from the heap and the next pass reuses them. The gain is measured by
``tests/benchmarks/bench_process_settings.py`` (see the performance page).

Other C libraries (and other systems) have no ``mallopt`` with these parameters; nothing is
changed there.

Python's cyclic garbage collector is paused while a partition is read and encoded
(:func:`collection_paused`): a partition's records (about 30 small objects a spectrum, a
thousand spectra) all live until it is encoded, and the collector, started every 700
allocations, walked them again and again: a quarter to a third of the CPU of an inline
conversion (20 MB of mzXML, of MGF and of profile mzML; bench_mzxml, bench_mgf: see the
performance page). Reference counting frees them as before; a cycle made meanwhile waits for
the next collection after the partition.
"""

from __future__ import annotations

import ctypes
import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_M_TRIM_THRESHOLD = -1  # glibc malloc.h
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 128 << 20

_kept: bool | None = None


def keep_freed_blocks() -> bool:
    """Make this process's ``malloc`` keep and reuse the blocks it frees (once per process;
    later calls only report). True when glibc took the settings."""
    global _kept
    if _kept is None:
        _kept = _set_thresholds()
    return _kept


def _set_thresholds() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return all(
        mallopt(option, value)
        for option, value in (
            (_M_MMAP_THRESHOLD, MMAP_THRESHOLD),
            (_M_TRIM_THRESHOLD, TRIM_THRESHOLD),
        )
    )


_pause_lock = threading.Lock()
_pauses = 0  # partitions being encoded in this process (threads of a worker)
_was_enabled = True


@contextmanager
def collection_paused() -> Iterator[None]:
    """Python's cyclic collector off while the block runs (in any thread of this process; on
    again when the last such block ends, if it was on before the first)."""
    global _pauses, _was_enabled
    with _pause_lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                gc.enable()
