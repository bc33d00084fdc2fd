"""A run's partition offsets guessed from its plan, so each partition is encoded and written
by one task, and checked as the partitions' counts come back.

Writing a partition needs its offsets: how many items of each entity the partitions before it
hold (:mod:`mzpeak_dask.archive.parts`). A chain of tasks can carry the true counts from one
partition to the next, but it makes a partition's write wait for the encode of the one before
and costs three tasks a partition. The plan nearly always knows them: a partition of spectra
holds ``len(items)`` MS spectra, one of chromatograms ``len(items)`` chromatograms — unless a
partition holds UV spectra, which share the spectra's item range and are numbered apart. So
each partition is written with the offsets the plan gives (:meth:`Offsets.guess`, built on
the counts known so far, and for a run with UV spectra on the split of the partitions that
came back), in one task; as counts come back, :meth:`Offsets.arrived` checks
every partition in order against the true offsets and names those written with a wrong guess,
to be encoded and written again with the true ones (all at once, in parallel). A run whose
sample holds no UV spectra (:attr:`Offsets.surely_right`) is submitted at once and checked by
its finishing task instead, which sends it back here if a guess was wrong after all (UV
spectra the sample missed). A run without UV spectra is never written twice, one with UV
spectra after its MS spectra about one window of partitions (where they start), one with UV
spectra interleaved in a changing proportion, or missed by its sample, up to every
partition; the archive is the same bytes either way, and the task finishing the run refuses
a partition written with offsets that are not the true ones.
"""

from __future__ import annotations

from .. import vocabulary as V
from ..contracts import RunPlan
from ..readers.base import CHROMATOGRAMS, SPECTRA

ENTITY = {SPECTRA: V.SPECTRUM, CHROMATOGRAMS: V.CHROMATOGRAM}  # of a partition's kind of item


def _add(offsets: dict[str, int], counts: dict[str, int]) -> dict[str, int]:
    out = dict(offsets)
    for entity, count in counts.items():
        out[entity] = out.get(entity, 0) + count
    return out


class Offsets:
    """The offsets a run's partitions are written with, and the true ones as they are known."""

    def __init__(self, plan: RunPlan):
        self.plan = plan
        self.used: dict[int, dict[str, int]] = {}  # partition -> offsets it was written with
        self.counts: dict[int, dict[str, int]] = {}  # partition -> its items per entity
        self.checked = 0  # partitions before this one have true offsets
        self.true: dict[str, int] = {}  # the true offsets of partition ``checked``

    @property
    def surely_right(self) -> bool:
        """Whether the plan's guesses are expected to be the true offsets: its sample held no
        UV spectra (a run with UV spectra the sample missed is still checked, see
        :func:`~.finish.finish_written`)."""
        return V.WAVELENGTH_SPECTRUM not in self.plan.sampled

    def guess(self, n: int) -> dict[str, int]:
        """Offsets for partition ``n``: the true ones of the partitions checked, plus the
        counts of each later one before ``n`` (known if it came back, else predicted)."""
        out = dict(self.true)
        for k in range(self.checked, n):
            known = self.counts.get(k)
            out = _add(out, self._predicted(k) if known is None else known)
        self.used[n] = out
        return out

    def written_with(self, n: int, offsets: dict[str, int]) -> None:
        """Partition ``n`` was written elsewhere with ``offsets`` (by the plan's task, from
        :meth:`guess` of a plan just made): they are checked as a guess of this object is."""
        self.used[n] = offsets

    def _predicted(self, k: int) -> dict[str, int]:
        """The counts of partition ``k`` are taken to be those of the nearest partition of its
        kind before it that came back if it is as large (UV spectra interleaved with MS spectra
        in the same proportion), all of that one's entity if it had one (UV spectra after MS
        spectra), else all of its kind's entity."""
        items = self.plan.partitions[k].items
        for j in range(k - 1, -1, -1):
            known = self.counts.get(j)
            if known is None or self.plan.partitions[j].items.kind != items.kind:
                continue
            if len(self.plan.partitions[j].items) == len(items):
                return known
            if len(known) == 1:
                return {next(iter(known)): len(items)}
            break
        return {ENTITY[items.kind]: len(items)}

    def arrived(self, n: int, counts: dict[str, int]) -> list[tuple[int, dict[str, int]]]:
        """Record partition ``n``'s counts; returns the partitions (with their true offsets)
        found written with a wrong guess, now that the counts before them are known."""
        self.counts[n] = counts
        wrong = []
        while self.checked in self.counts:
            k = self.checked
            # a partition's offsets matter for the entities it holds (its peaks: its spectra)
            if any(self.used[k].get(e, 0) != self.true.get(e, 0) for e in self.counts[k]):
                self.used[k] = dict(self.true)
                wrong.append((k, self.used[k]))
            self.true = _add(self.true, self.counts[k])
            self.checked += 1
        return wrong


__all__ = ["Offsets"]
