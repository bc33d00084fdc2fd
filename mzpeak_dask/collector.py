"""Python's cyclic garbage collector, paused while a partition is encoded.

A partition's records and rows are freed by reference counting; the collector's passes over
them find nothing, and cost about a quarter of the encode (``tests/benchmarks/
bench_process_settings.py`` measures it). :func:`paused` holds the collector off for the
encode of one partition and restores it after: nothing changes for the rest of the process.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """The collector paused (and resumed after, if it ran before)."""
    running = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if running:
            gc.enable()
