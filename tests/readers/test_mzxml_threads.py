"""mzXML read from several threads of one process at once, as a Dask worker with several
threads does: every thread gets the scans a lone reader gets."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from mzpeak_dask.readers.base import SPECTRA, ItemRange
from mzpeak_dask.readers.mzxml import MzXMLFormat

from ..conftest import DATA

SOURCE = str(DATA / "depthcharge" / "TMT10-Trial-8.mzXML")


def _scans(items: ItemRange) -> list[tuple]:
    return [
        (r.position, r.id, *(np.asarray(a.values).tobytes() for a in r.arrays))
        for r in MzXMLFormat.read(SOURCE, items, {})
    ]


def test_threads_reading_one_mzxml_each_get_their_scans() -> None:
    count = MzXMLFormat.survey(SOURCE).spectrum_count
    ranges = [ItemRange(SPECTRA, a, min(a + 3, count)) for a in range(0, count, 3)] * 8
    alone = [_scans(r) for r in ranges]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(_scans, ranges))
    assert together == alone
