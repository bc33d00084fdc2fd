"""Which runs of a batch share a task: consecutive small files are planned, converted and
finished by one task (:func:`~.finish.convert_each`), which divides the cluster's cost
per task — a few milliseconds of the coordinator's CPU, whatever the task does — between them.

A pack holds up to :data:`MAX_RUNS` runs and :data:`PARTITIONS` partitions' worth of input
bytes, so that a pack of small files is about as much work as two tasks of a large run, and
never more runs than leave two tasks for every worker thread while few runs wait (a batch's
last tasks then end together). A file larger than a partition, or one that is not local,
starts a task of its own.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_RUNS = 32  # runs in a task planning several
PARTITIONS = 2  # the input bytes of a pack, in partitions


@dataclass(frozen=True, slots=True)
class Room:
    """What a pack started now may hold: runs, and input bytes."""

    runs: int
    bytes: int

    @classmethod
    def now(cls, waiting: int, threads: int, partition_bytes: int) -> Room:
        """The room of a pack while ``waiting`` runs wait for ``threads`` worker threads."""
        runs = max(1, min(MAX_RUNS, waiting // (2 * threads)))
        return cls(runs, PARTITIONS * partition_bytes)

    def takes(self, runs: int, held: int, size: int | None) -> bool:
        """Whether a pack of ``runs`` runs holding ``held`` bytes takes one more of ``size``
        bytes (None: not a small local file). An empty pack takes any run."""
        if runs == 0:
            return True
        return size is not None and runs < self.runs and held + size <= self.bytes
