"""The lean mzXML reader gives the records the pyteomics reader it replaced gave: every scan's
params (types included), scans, precursors and arrays (dtype and bytes) equal those made of
pyteomics' own dictionary of the scan, on every mzXML of ../shared/data and on real runs
replicated to tens of MB, read in partitions cut anywhere (inside nested scans too), with the
scan index right, missing or wrong."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyteomics import mzxml

from mzpeak_dask.encode.plan import item_range
from mzpeak_dask.readers.base import SPECTRA
from mzpeak_dask.readers.mzxml import MzXMLFormat, _spectrum

from ..conftest import DATA, input_files
from ..helpers.mzxml_files import replicated

MZXML = [p for p in input_files() if p.name.endswith(".mzXML")]
_NUM = re.compile(rb'<scan\s[^>]*?\bnum="(\d+)"')


def _shown(record) -> tuple:
    """A record as plain text and bytes: values compare with their types (1 is not 1.0)."""
    arrays = [
        (a.array_type, a.name, a.unit, a.values.dtype.str, a.values.tobytes(), repr(a.params))
        for a in record.arrays
    ]
    return (
        record.position,
        record.id,
        repr(record.params),
        repr(record.scans),
        repr(record.precursors),
        arrays,
        record.data_processing_ref,
    )


def reference(path: Path) -> list[tuple]:
    """The records of pyteomics' dictionaries of the scans, in document order."""
    with mzxml.MzXML(str(path), use_index=False) as reader:
        infos = {str(info["num"]): info for info in reader}
    order = [n.decode() for n in _NUM.findall(path.read_bytes())]
    assert sorted(order) == sorted(infos)  # every scan once
    return [_shown(_spectrum(infos[num], k)) for k, num in enumerate(order)]


def lean(path: Path, per_partition: int) -> list[tuple]:
    """The records of the lean reader, read in partitions of ``per_partition`` scans."""
    survey = MzXMLFormat.survey(str(path))
    n = survey.spectrum_count
    out = []
    for start in range(0, n, per_partition):
        items = item_range(survey, SPECTRA, start, min(n, start + per_partition))
        out.extend(_shown(r) for r in MzXMLFormat.read(str(path), items, survey.hints))
    return out


@pytest.mark.parametrize("path", MZXML, ids=lambda p: p.name)
@pytest.mark.parametrize("per_partition", [1, 3, 1000])
def test_every_mzxml_reads_as_pyteomics_reads_it(path: Path, per_partition: int) -> None:
    assert lean(path, per_partition) == reference(path)


REPLICATED = {
    # Orbitrap MS1 + MS2, 32-bit, uncompressed, no index of its own: 24 MB
    "test2": (DATA / "openms" / "test2.mzXML", 24_000_000),
    # Q Exactive profile, zlib, with compressedLen: 6 MB
    "microscans": (DATA / "ms_deisotope" / "microscans.mzXML", 6_000_000),
    # MS2 nested in MS1 scans, zlib: 1 MB
    "nested": (DATA / "openms" / "MzXMLFile_1_compressed.mzXML", 1_000_000),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REPLICATED))
def test_replicated_runs_read_as_pyteomics_reads_them(tmp_path: Path, name: str) -> None:
    source, size = REPLICATED[name]
    path = tmp_path / f"{name}.mzXML"
    count = replicated(source, path, size)
    expected = reference(path)
    assert len(expected) == count
    assert lean(path, 97) == expected


def _index_broken(data: bytes, how: str) -> bytes:
    if how == "no index":
        return re.sub(rb"<indexOffset>\d+</indexOffset>", b"<indexOffset>0</indexOffset>", data)
    if how == "stale indexOffset":
        return re.sub(rb"<indexOffset>(\d+)</indexOffset>", b"<indexOffset>17</indexOffset>", data)
    if how == "offsets one byte off":
        moved = lambda m: b">%d<" % (int(m.group(1)) + 1)  # noqa: E731
        return re.sub(rb">(\d+)</offset>", lambda m: moved(m) + b"/offset>", data)
    # an index listing only some scans (scanCount says how many the run holds)
    return re.sub(rb'<offset id="\d+">\d+</offset>\s*(?=</index>)', b"", data)


@pytest.mark.parametrize(
    "how", ["no index", "stale indexOffset", "offsets one byte off", "index missing a scan"]
)
def test_a_missing_or_wrong_index_is_replaced_by_a_scan_of_the_file(
    tmp_path: Path, how: str
) -> None:
    source = DATA / "depthcharge" / "TMT10-Trial-8.mzXML"
    path = tmp_path / "broken-index.mzXML"
    path.write_bytes(_index_broken(source.read_bytes(), how))
    assert path.read_bytes() != source.read_bytes()
    assert lean(path, 4) == reference(source)


@pytest.mark.parametrize("name", ["TMT10-Trial-8.mzXML", "microscans.mzXML"])
def test_scans_without_peaks_count_read_as_pyteomics_reads_them(tmp_path: Path, name) -> None:
    """``peaksCount`` is optional: the payload then bounds itself (by the ceiling)."""
    source = next(p for p in MZXML if p.name == name)
    path = tmp_path / name
    path.write_bytes(re.sub(rb'\speaksCount="\d+"', b"", source.read_bytes()))
    assert b"peaksCount" not in path.read_bytes()
    assert lean(path, 2) == reference(path)
