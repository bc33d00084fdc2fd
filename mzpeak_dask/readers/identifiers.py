"""Spectrum ids repeated within a run.

mzML requires a spectrum's ``id`` to be unique in its run, and readers look spectra up by it;
some writers repeat ids all the same (OpenMS' ``FileConverter_30_output.mzML`` repeats four of
them 58 times). Such a run still converts (nothing is lost: spectra are stored by index), with
a warning, since an id then names the first of its spectra only.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..format import vocabulary as V


class DuplicateIds:
    """The ids seen so far in a run, fed partition by partition in order (on the coordinator:
    a set of strings, about a hundred bytes a spectrum)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self.repeats = 0  # spectra whose id an earlier spectrum already had
        self.first: str | None = None

    def feed(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        distinct = set(ids)
        # later occurrences within these ids, and first ones of ids seen before them
        repeats = len(ids) - len(distinct) + len(distinct & self._seen)
        if repeats and self.first is None:
            self.first = _first_repeat(ids, self._seen)
        self._seen |= distinct
        self.repeats += repeats

    def feed_partition(self, part: object) -> None:
        """The ids of an :class:`~mzpeak_dask.encode.contracts.EncodedPartition`'s MS spectra."""
        spectra = getattr(part, "metadata", {}).get(V.SPECTRUM, {}).get("spectrum")
        if spectra is not None and len(spectra):
            self.feed(spectra.field("id").to_pylist())

    def warning(self, path: object) -> str | None:
        """One line for the user, or None when every id is unique."""
        if not self.repeats:
            return None
        return (
            f"{path}: {self.repeats:,} spectra repeat the id of an earlier spectrum "
            f"(first {self.first!r}); looking a spectrum up by such an id finds the first"
        )


def _first_repeat(ids: list[str], seen: set[str]) -> str | None:
    """The first of ``ids`` that an earlier spectrum had (taken once per run)."""
    earlier = set()
    for i in ids:
        if i in seen or i in earlier:
            return i
        earlier.add(i)
    return None
