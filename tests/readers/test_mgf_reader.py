"""The MGF reader against the pyteomics path (the reference in tests/helpers/mgf_reference.py):
every MGF of ../shared/data, a replicated one of tens of MB, and a file holding every dialect
seen in real files, read in one partition and in several; m/z and intensity bit for bit,
precursor m/z, intensity and charges, retention times, titles, ids and every other parameter
exact."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mzpeak_dask.readers import ItemRange, detect_format
from mzpeak_dask.readers.mgf import MGFFormat

from ..conftest import DATA
from ..helpers.mgf_reference import assert_same, our_spectra, plain, pyteomics_spectra
from ..helpers.replicate import copies_for
from ..helpers.replicate_mgf import replicate_mgf

MGFS = [
    "mzdata/small.mgf",
    "openms/GNPSExport_3_out.mgf",
    "depthcharge/TMT10-Trial-8.mgf",
    "pyteomics/test.mgf",
]


def _cuts(n: int) -> list[int]:
    return sorted({k for k in (1, n // 3, n // 2, n - 1) if 0 < k < n})


@pytest.mark.parametrize("name", MGFS)
def test_every_mgf_reads_as_pyteomics_does(name: str) -> None:
    path = DATA / name
    assert detect_format(str(path)) is MGFFormat
    expected = pyteomics_spectra(path)
    assert_same(expected, our_spectra(path), name)
    assert_same(expected, our_spectra(path, _cuts(len(expected))), f"{name} in partitions")


def test_file_level_charge_applies_to_spectra_without_their_own() -> None:
    """pyteomics' test.mgf: ``CHARGE=2+ and 3+`` before the first spectrum; its second spectrum
    has no CHARGE, so its precursor is 2+ with 3+ possible (its first keeps its own 2+)."""
    first, second = our_spectra(DATA / "pyteomics" / "test.mgf")
    assert [p[1:3] for p in first["precursors"][0]] == [("MS:1000744", 983.6), ("MS:1000041", 2)]
    assert [p[1:3] for p in second["precursors"][0]] == [
        ("MS:1000744", 1084.9),
        ("MS:1000041", 2),
        ("MS:1000633", 3),
        ("MS:1000042", 1234.0),
    ]


@pytest.mark.slow
def test_a_replicated_mgf_of_tens_of_mb(tmp_path: Path) -> None:
    source = DATA / "openms" / "GNPSExport_3_out.mgf"
    path = tmp_path / "replicated.mgf"
    size = replicate_mgf(source, path, copies_for(source, 30))
    assert size > 25e6
    expected = pyteomics_spectra(path)
    assert_same(expected, our_spectra(path, _cuts(len(expected))), "replicated")


def _peaks(name: str, count: int) -> list[str]:
    """Peak lines of the first spectrum of a real MGF."""
    lines = (DATA / name).read_text().splitlines()
    start = next(k for k, line in enumerate(lines) if line[:1].isdigit())
    return lines[start : start + count]


def dialects() -> str:
    """Spectra in every dialect seen in real files, with real peaks."""
    small = _peaks("mzdata/small.mgf", 40)
    gnps = _peaks("openms/GNPSExport_3_out.mgf", 30)  # tab-separated
    charged = [f"{line} {k % 3 + 1}" for k, line in enumerate(small[:10])]
    signed = [f"{line}\t{k % 2 + 1}+" if k % 3 else line for k, line in enumerate(gnps[:12])]
    parts = [
        "# a comment before everything",
        "COM=made from real peak lists",
        "USERNAME=someone",
        "CHARGE=2+ and 3+",
        "",
        "BEGIN IONS",
        "TITLE=run=7;scan=12 (charge=2)",
        "PEPMASS=810.789428710938 183838.71875",
        "CHARGE=2+,3+",
        "RTINSECONDS=12.5",
        "SCANS=12",
        "; a comment",
        "! another",
        "/ and another",
        *small[:15],
        "",
        "# among the peaks",
        *small[15:30],
        "END IONS",
        "",
        "BEGIN IONS",
        "TITLE=no charge of its own",
        "PEPMASS=445.12",
        "RTINSECONDS=30",
        *charged,
        "END IONS",
        "BEGIN IONS",
        "TITLE=empty",
        "PEPMASS=500.5 10",
        "CHARGE=1-",
        "END IONS",
        "BEGIN IONS",
        "TITLE=charge in PEPMASS",
        "PEPMASS=612.3 55.5 4+",
        "MSLEVEL=3",
        *signed,
        "SCANS=99",
        "END IONS",
        "BEGIN IONS",
        "TITLE=tabs",
        "PEPMASS=321.2575",
        "CHARGE=3",
        *gnps,
        "END IONS",
        "",
    ]
    return "\n".join(parts)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_every_dialect_reads_as_pyteomics_does(tmp_path: Path, newline: str) -> None:
    path = tmp_path / "dialects.mgf"
    path.write_bytes(dialects().replace("\n", newline).encode())
    expected = pyteomics_spectra(path)
    got = our_spectra(path)
    assert_same(expected, got, "dialects")
    assert_same(expected, our_spectra(path, [1, 2, 4]), "dialects in partitions")
    # what the dialects hold, read back (so that a reference that read them wrong would show)
    title = got[0]["params"][3]
    assert title[1:3] == ("MS:1000796", "run=7;scan=12 (charge=2)")
    assert len(got[0]["arrays"]["m/z array"]) == 30
    assert [p[2] for p in got[1]["precursors"][0]] == [445.12, 2, 3]
    assert list(got[1]["arrays"]["charge array"]) == [k % 3 + 1 for k in range(10)]
    assert len(got[2]["arrays"]["m/z array"]) == 0 and got[2]["precursors"][0][1][2] == -1
    assert [p[2] for p in got[3]["precursors"][0]] == [612.3, 4, 55.5]
    assert ("SCANS", None, "99", None) in got[3]["params"]
    assert list(got[3]["arrays"]["charge array"]) == [k % 2 + 1 if k % 3 else 0 for k in range(12)]


def test_annotations_in_the_third_column_are_left_out(tmp_path: Path) -> None:
    """Peak annotations (``b2``, ``y3-H2O+1``) are not charges: the peaks are kept, without a
    charge array (pyteomics stops at them: compared with the file without them)."""
    small = _peaks("mzdata/small.mgf", 8)
    notes = ["b2", "y3-H2O+1", "?", "b4+2", "a1", "internal", "y7", "x"]
    body = ["BEGIN IONS", "TITLE=annotated", "PEPMASS=810.79"]
    annotated = [*body, *(f"{p} {n}" for p, n in zip(small, notes, strict=True)), "END IONS"]
    plain_file = [*body, *small, "END IONS"]
    (tmp_path / "annotated.mgf").write_text("\n".join(annotated) + "\n")
    (tmp_path / "plain.mgf").write_text("\n".join(plain_file) + "\n")
    got = our_spectra(tmp_path / "annotated.mgf")
    assert_same(pyteomics_spectra(tmp_path / "plain.mgf"), got, "annotated")
    assert "charge array" not in got[0]["arrays"]


def test_partitions_are_cut_between_blocks(tmp_path: Path) -> None:
    """The survey finds each BEGIN IONS line and only those (not one inside a title, nor one
    across the edge of a search chunk), and the last spectrum's range ends after END IONS."""
    from mzpeak_dask.readers import bytesource

    block = "BEGIN IONS\nTITLE=BEGIN IONS inside\nPEPMASS=100\n1 2\nEND IONS\n"
    text = "SEARCH=BEGIN IONS\n" + block * 3 + "\n\n"
    path = tmp_path / "edge.mgf"
    path.write_text(text)
    survey = MGFFormat.survey(str(path))
    start = text.index("\nBEGIN IONS") + 1
    assert list(survey.spectrum_offsets) == [start + k * len(block) for k in range(4)]
    chunk = bytesource.CHUNK  # a BEGIN IONS line across the edge of the first search chunk
    big = "X=" + "y" * (chunk - 6) + "\n" + block * 2
    (tmp_path / "big.mgf").write_text(big)
    offsets = MGFFormat.survey(str(tmp_path / "big.mgf")).spectrum_offsets
    assert list(offsets) == [chunk - 3, chunk - 3 + len(block), len(big)]
    items = ItemRange("spectrum", 0, 2, int(offsets[0]), int(offsets[2]))
    records = list(MGFFormat.read(str(tmp_path / "big.mgf"), items, {}))
    assert [plain(r)["arrays"]["m/z array"].tolist() for r in records] == [[1.0], [1.0]]
    assert np.array_equal(plain(records[1])["arrays"]["intensity array"], [2.0])


def test_every_value_python_reads_as_a_number_is_one(tmp_path: Path) -> None:
    """Peak values such as ``NaN``, ``inf``, ``1e3`` and ``+5`` (which a CSV parser may read as
    null or refuse) read as pyteomics reads them, whether the partition's peak lines are
    converted together or block by block."""
    body = ["100.5\t1e3", "101.25\tNaN", "102\t+5", "103.125\tinf", "1.5E2\t-0.0"]
    blocks = [["BEGIN IONS", f"TITLE=s{k}", "PEPMASS=400", *body, "END IONS"] for k in range(3)]
    path = tmp_path / "values.mgf"
    path.write_text("\n".join(line for block in blocks for line in block) + "\n")
    expected = pyteomics_spectra(path)
    for cuts in (None, [1, 2]):
        got = our_spectra(path, cuts)
        assert len(got) == len(expected) == 3
        for e, g in zip(expected, got, strict=True):
            for name in ("m/z array", "intensity array"):
                assert np.array_equal(e["arrays"][name], g["arrays"][name], equal_nan=True)
                assert np.array_equal(np.signbit(e["arrays"][name]), np.signbit(g["arrays"][name]))
