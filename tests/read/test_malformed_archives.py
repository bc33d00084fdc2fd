"""Systematically damaged archives: footers that lie about row counts and sizes, members cut,
replaced or missing, index JSON of every wrong type. Opening, reading every item, ``info`` and
``validate`` either work or raise one ArchiveError line naming the archive; ``validate`` reports
each damage as an error; nothing raises pyarrow's or Python's own exceptions, nor allocates what
a footer claims."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from mzpeak_dask import ArchiveError, ConvertOptions, convert, open_archive
from mzpeak_dask.read.summary import summarize
from mzpeak_dask.read.validate import ERROR, validate

from ..conftest import BUNDLED, DATA, INLINE
from ..helpers import archive_damage as D
from ..helpers.cli import run_cli

TINY = DATA / "pyteomics" / "tiny.pwiz.1.1.mzML"  # 4 spectra (profile and centroid), 2 TICs
INDEX = "mzpeak_index.json"
PARQUET = [
    "spectra_data.parquet",
    "spectra_peaks.parquet",
    "spectra_metadata.parquet",
    "chromatograms_data.parquet",
    "chromatograms_metadata.parquet",
]
Damage = Callable[[dict[str, bytes]], None]


def _rows(rows: int, *, values: bool = True) -> Callable[[list], None]:
    def edit(f: list) -> None:
        D.set_field(f, D.FILE_NUM_ROWS, rows)
        for group in D.row_groups(f):
            D.set_field(group, D.GROUP_NUM_ROWS, rows)
        for meta in D.column_meta(f) if values else []:
            D.set_field(meta, D.META_NUM_VALUES, max(rows, 0))

    return edit


def _columns(number: int, value: int) -> Callable[[list], None]:
    def edit(f: list) -> None:
        for meta in D.column_meta(f):
            D.set_field(meta, number, value)

    return edit


FOOTER_EDITS = {
    "3e9 rows": _rows(3_000_000_000),
    "4e8 rows": _rows(400_000_000),
    "3e9 rows, values as they were": _rows(3_000_000_000, values=False),
    "a million rows": _rows(1_000_000),
    "negative rows": _rows(-5, values=False),
    "file rows only": lambda f: D.set_field(f, D.FILE_NUM_ROWS, 3_000_000_000),
    "negative compressed size": _columns(D.META_COMPRESSED, -5),
    "negative uncompressed size": _columns(D.META_UNCOMPRESSED, -5),
    "huge compressed size": _columns(D.META_COMPRESSED, 1 << 40),
    "negative page offset": _columns(D.META_DATA_PAGE, -1),
    "page offset past the end": _columns(D.META_DATA_PAGE, 1 << 30),
}


def _footer_case(member: str, edit: Callable[[list], None]) -> Damage:
    def damage(m: dict[str, bytes]) -> None:
        m[member] = D.edit_footer(m[member], edit)

    return damage


def _replace(member: str, make: Callable[[bytes], bytes]) -> Damage:
    def damage(m: dict[str, bytes]) -> None:
        m[member] = make(m[member])

    return damage


def _delete(member: str) -> Damage:
    return lambda m: m.pop(member)


def _array_index(member: str, value: bytes) -> Damage:
    key = (b"chromatogram" if member.startswith("chromatograms") else b"spectrum") + b"_array_index"
    return _footer_case(member, lambda f: D.set_key_value(f, key, value))


def _index(doc: object) -> Damage:
    def damage(m: dict[str, bytes]) -> None:
        m[INDEX] = doc if isinstance(doc, bytes) else json.dumps(doc).encode()

    return damage


def _index_files(edit: Callable[[list], object]) -> Damage:
    def damage(m: dict[str, bytes]) -> None:
        doc = json.loads(m[INDEX])
        doc["files"] = edit(doc["files"])
        m[INDEX] = json.dumps(doc).encode()

    return damage


CASES: dict[str, Damage] = {}
for _member in PARQUET:
    for _name, _edit in FOOTER_EDITS.items():
        CASES[f"{_member}: {_name}"] = _footer_case(_member, _edit)
    CASES[f"{_member}: missing"] = _delete(_member)
    CASES[f"{_member}: cut in half"] = _replace(_member, lambda b: b[: len(b) // 2])
    CASES[f"{_member}: cut before its footer"] = _replace(_member, lambda b: b[:-9] + b[-8:])
    CASES[f"{_member}: empty"] = _replace(_member, lambda b: b"")
    CASES[f"{_member}: junk"] = _replace(_member, lambda b: b"PAR1" + b"\x07" * 200 + b"PAR1")
    CASES[f"{_member}: footer length past the start"] = _replace(
        _member, lambda b: b[:-8] + struct.pack("<I", len(b) + 10) + b"PAR1"
    )
for _member in ("spectra_data.parquet", "chromatograms_data.parquet"):
    for _value in (b"not json", b"[]", b'"x"', b"{}", b'{"prefix": 3, "entries": []}'):
        CASES[f"{_member}: array index {_value.decode()}"] = _array_index(_member, _value)
    CASES[f"{_member}: array index entries of wrong types"] = _array_index(
        _member, b'{"prefix": "point", "entries": [1, "x", {"path": 5, "sorting_rank": "a"}]}'
    )
for _doc in (b"not json", [], "files", 3, None, {"files": "x"}, {"files": [1, None]}):
    CASES[f"index {json.dumps(_doc) if not isinstance(_doc, bytes) else 'not json'}"] = _index(_doc)
CASES["index entry name of a wrong type"] = _index_files(lambda f: [{**f[0], "name": 5}] + f[1:])
CASES["index entry kind of a wrong type"] = _index_files(
    lambda f: [{**f[0], "data_kind": ["x"]}] + f[1:]
)
CASES["index metadata a list"] = lambda m: m.update(
    {INDEX: json.dumps({**json.loads(m[INDEX]), "metadata": []}).encode()}
)
CASES["index lists no members"] = _index_files(lambda f: [])
CASES["index missing"] = _delete(INDEX)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    path = tmp_path_factory.mktemp("pristine") / "tiny.mzpeak"
    convert(TINY, path, ConvertOptions(centroids="peaks"), cluster=INLINE)  # every member
    content = D.members(path)
    assert set(PARQUET) | {INDEX} == set(content)
    assert not [p for p in validate(path) if p.severity == ERROR]
    return content


def _read_everything(path: Path) -> None:
    with open_archive(path) as archive:
        for i in range(len(archive)):
            spectrum = archive[i]
            spectrum.params, spectrum.scans, spectrum.precursors  # noqa: B018
            archive.read_peaks(i)
        for i in range(archive.chromatogram_count):
            archive.read_chromatogram(i)
        archive.file_metadata  # noqa: B018
        summarize(archive)


def _one_line(exc: ArchiveError, path: Path) -> None:
    assert len(str(exc).splitlines()) == 1, str(exc)
    assert str(exc).startswith(str(path)), str(exc)


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
@pytest.mark.parametrize("directory", [False, True], ids=["zip", "directory"])
def test_damaged_archives_raise_only_archive_errors(
    case: str, directory: bool, pristine: dict[str, bytes], tmp_path: Path
) -> None:
    content = dict(pristine)
    CASES[case](content)
    path = D.write_archive(tmp_path / "damaged.mzpeak", content, directory=directory)
    try:
        _read_everything(path)
    except ArchiveError as exc:
        _one_line(exc, path)
    errors = [p for p in validate(path) if p.severity == ERROR]
    assert errors, f"validate finds nothing wrong with: {case}"
    assert all(len(str(p).splitlines()) == 1 for p in errors)


def test_a_zip_cut_short_is_one_error(pristine: dict[str, bytes], tmp_path: Path) -> None:
    whole = D.write_archive(tmp_path / "whole.mzpeak", pristine).read_bytes()
    for fraction in (0.3, 0.6, 0.99):
        path = tmp_path / f"cut{fraction}.mzpeak"
        path.write_bytes(whole[: int(len(whole) * fraction)])
        with pytest.raises(ArchiveError) as raised:
            _read_everything(path)
        _one_line(raised.value, path)
        assert [p for p in validate(path) if p.severity == ERROR]


@pytest.mark.slow
def test_a_missing_data_member_is_an_error_not_an_empty_spectrum(tmp_path: Path) -> None:
    """The audit's case: spectra_data.parquet deleted, still listed in the index; the first
    spectrum of small.mzML has 13,589 points and used to come back empty, info exiting 0."""
    source = tmp_path / "small.mzpeak"
    convert(BUNDLED / "small.mzML", source, ConvertOptions(layout="point"), cluster=INLINE)
    with open_archive(source) as archive:
        assert len(archive[0].mz) == 13_589
    content = D.members(source)
    del content["spectra_data.parquet"]
    path = D.write_archive(tmp_path / "lost.mzpeak", content)
    with pytest.raises(ArchiveError, match=r"lost\.mzpeak: .*lists spectra_data\.parquet"):
        open_archive(path)
    for command in ("info", "validate"):
        result = run_cli(command, str(path))
        lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
        assert result.returncode == 1, result
        assert any("spectra_data.parquet" in line for line in lines), lines
        assert "internal error" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "case", ["index []", "spectra_metadata.parquet: 3e9 rows", "spectra_data.parquet: junk"]
)
@pytest.mark.slow
def test_cli_info_and_validate_give_one_line(
    case: str, pristine: dict[str, bytes], tmp_path: Path
) -> None:
    content = dict(pristine)
    CASES[case](content)
    path = D.write_archive(tmp_path / "damaged.mzpeak", content)
    info = run_cli("info", str(path))
    assert info.returncode == 1
    assert info.stderr.count("\n") == 1 and info.stderr.startswith(f"error: {path}: ")
    assert "internal error" not in info.stderr
    checked = run_cli("validate", str(path))
    assert checked.returncode == 1 and not checked.stderr
    lines = checked.stdout.splitlines()
    assert any(line.startswith(f"{path}: error: ") for line in lines)
    assert all(line.startswith((f"{path}: error: ", f"{path}: warning: ")) for line in lines)
