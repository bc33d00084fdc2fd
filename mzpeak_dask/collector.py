"""Python's cyclic garbage collector in a process that encodes partitions.

A partition's records and rows are freed by reference counting; the collector's passes over
them find nothing. :func:`paused` holds it off while a partition is encoded (its passes cost
about a quarter of the encode).

Between partitions it runs, and now and then a pass over its oldest generation walks every
object the process keeps: the modules of numpy, pyarrow, lxml, Dask and this package, and the
vocabularies once loaded (78,000 objects in a worker, 180,000 with the PSI-MS ontology). On a
worker converting the 102 MB benchmark run that was one pass a run, 30-57 ms (80 ms with the
ontology), finding nothing. :func:`settle` moves what the process holds when its second
partition begins (everything its first one imported and cached) out of the collector's reach
(:func:`gc.freeze`), once: reference counting still frees those objects, only a cycle among
them that becomes garbage later is never collected (a bounded, one-time amount: the process's
state at that moment). Young garbage is collected first, so none is frozen. On one cluster,
conversions of that run alternating with the freeze lifted and made: 2.96 s instead of 3.10 s
on one worker, 1.68 s instead of 1.72 s on two, and 0.1 s less of the workers' CPU on either
(medians of eight each).

Freezing is a choice for a whole process, so it is made only in a process that converts and
does nothing else (:func:`own_process`): the workers of a LocalCluster this package starts, and
the ``mzpeak-dask`` command. A program that calls :func:`~mzpeak_dask.convert` keeps its collector
as it is, and so do the workers of a cluster someone else runs.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_owned = False
_partitions_begun = 0


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


def own_process() -> None:
    """This process converts and does nothing else: :func:`settle` may freeze its objects."""
    global _owned
    _owned = True


def settle() -> bool:
    """Called as each partition begins: at the second in a process of this package's own
    (:func:`own_process`), the process's objects are frozen out of the collector's passes.
    True when this call froze them."""
    global _partitions_begun
    _partitions_begun += 1
    if not _owned or _partitions_begun != 2:
        return False
    gc.collect(1)
    gc.freeze()
    return True
