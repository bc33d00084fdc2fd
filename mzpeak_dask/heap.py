"""The C heap of a process that encodes partitions: freed blocks kept for reuse (glibc).

Encoding a partition allocates and frees numpy temporaries of a few MB each (the spectra's
concatenated arrays and every pass over them). glibc's ``malloc`` serves a block above its mmap
threshold with pages fresh from the kernel and unmaps them on ``free``; the kernel zero-fills
every page again on its first touch. Over the 13 partitions of a 4 M-point run that was about
120,000 minor page faults, a third of the encode's CPU time. With the mmap threshold at 32 MiB
(glibc's own ceiling for it) and the top of the heap trimmed only beyond 128 MiB free, those
blocks come from the heap and the next pass reuses them: a few thousand faults, the same peak
memory (a process keeps at most the 128 MiB it would have given back).

Arrow's buffers (the partition's tables, the Parquet writer's pages) come from that heap too:
pyarrow's default pool, mimalloc, gives freed memory back to the kernel soon after and takes
it again with system calls of its own. Measured on the 15 partitions of a 102 MB run in one
process: 2.62 s of CPU instead of 2.73-2.82 s (0.05 s of it in the kernel instead of
0.15-0.27 s), the first partition 0.22 s instead of 0.26-0.38 s, and a peak resident size of
191-196 MB instead of 245 MB. In a batch of small runs (108 runs of about 1 MB on two workers)
the workers' CPU did not differ beyond the noise: 9.9-10.2 s against 9.6-10.2 s.

All that holds for the heap of a process's main thread. A Dask worker runs its tasks in a thread
of its own, which glibc serves from a thread arena: heaps of at most 64 MiB each, and one that
becomes wholly free is unmapped at once, whatever the trim threshold, unless the top pad is
as large as a heap. With a pad of 64 MiB a thread arena keeps its heaps, as the main heap
keeps its blocks: on two workers encoding partitions of about 500,000 points, 2,600-3,700 page
faults each time a partition was encoded again became 12-500, and 14 partitions of a 102 MB
run took 2.12-2.22 s of the workers' CPU instead of 2.16-2.37 s (1.14-1.20 s of wall time
instead of 1.19-1.36 s). A thread arena then holds what its largest partition took, as the
main heap does; the main heap grows by the pad when it grows (address space, not memory).

Other C libraries (and other systems) have no ``mallopt`` with these parameters; nothing is
changed there, Arrow keeps its own pool.
"""

from __future__ import annotations

import ctypes
import sys

import pyarrow as pa

_M_TRIM_THRESHOLD = -1  # glibc malloc.h
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 128 << 20
TOP_PAD = 64 << 20  # a thread arena's heap is at most 64 MiB (glibc's HEAP_MAX_SIZE, 64-bit)

_kept: bool | None = None


def keep_freed_blocks() -> bool:
    """Make this process's ``malloc`` keep and reuse the blocks it frees, and Arrow allocate
    from it (once per process; later calls only report). True when glibc took the settings."""
    global _kept
    if _kept is None:
        _kept = _set_thresholds()
        if _kept:
            pa.set_memory_pool(pa.system_memory_pool())
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
            (_M_TOP_PAD, TOP_PAD),
        )
    )
