"""An index that contradicts the members it lists: a member listed twice, two members' kinds or
entities swapped. Such an archive used to open as a run of 0 spectra (or chromatograms) with no
error, and ``info`` exited 0; now opening raises one ArchiveError line naming the archive and
what is wrong, ``info`` prints one ``error:`` line and ``validate`` reports it, both exiting 1."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from mzpeak_dask import ArchiveError, ConvertOptions, convert, open_archive
from mzpeak_dask.read.validate import ERROR, validate

from ..conftest import DATA, INLINE
from ..helpers import archive_damage as D
from ..helpers.cli import one_line_error, run_cli

TINY = DATA / "pyteomics" / "tiny.pwiz.1.1.mzML"  # 4 spectra, 2 chromatograms
INDEX = "mzpeak_index.json"
Files = list[dict[str, str]]


def _entry(files: Files, name: str) -> dict[str, str]:
    return next(f for f in files if f["name"] == name)


def _swap(first: str, second: str, key: str) -> Callable[[Files], Files]:
    def edit(files: Files) -> Files:
        a, b = _entry(files, first), _entry(files, second)
        a[key], b[key] = b[key], a[key]
        return files

    return edit


SPECTRA_DATA, SPECTRA_META = "spectra_data.parquet", "spectra_metadata.parquet"
CHROM_DATA, CHROM_META = "chromatograms_data.parquet", "chromatograms_metadata.parquet"

# case: (edit of the index's files, what the one error line must name)
CASES: dict[str, tuple[Callable[[Files], Files], str]] = {
    "the same entry twice": (lambda f: f + [dict(f[0])], f"lists {SPECTRA_DATA} twice"),
    "data listed as metadata too, first": (
        lambda f: [{**_entry(f, SPECTRA_DATA), "data_kind": "metadata"}] + f,
        f"lists {SPECTRA_DATA} twice",
    ),
    "data listed as metadata too, last": (
        lambda f: f + [{**_entry(f, SPECTRA_DATA), "data_kind": "metadata"}],
        f"lists {SPECTRA_DATA} twice",
    ),
    "two members claim spectrum metadata": (
        lambda f: [{**e, "entity_type": "spectrum"} if e["name"] == CHROM_META else e for e in f],
        f"lists both {SPECTRA_META} and {CHROM_META} as spectrum metadata",
    ),
    "spectrum data and metadata swapped": (
        _swap(SPECTRA_DATA, SPECTRA_META, "data_kind"),
        f"{SPECTRA_DATA} is listed as spectrum metadata but holds no spectrum table",
    ),
    "chromatogram data and metadata swapped": (
        _swap(CHROM_DATA, CHROM_META, "data_kind"),
        f"{CHROM_DATA} is listed as chromatogram metadata but holds no chromatogram table",
    ),
    "spectrum and chromatogram data swapped": (
        _swap(SPECTRA_DATA, CHROM_DATA, "entity_type"),
        f"{CHROM_DATA}: listed as spectrum data arrays, but no spectrum_array_index in its footer",
    ),
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    path = tmp_path_factory.mktemp("pristine") / "tiny.mzpeak"
    convert(TINY, path, ConvertOptions(), cluster=INLINE)
    with open_archive(path) as archive:
        assert (len(archive), archive.chromatogram_count) == (4, 2)
    return D.members(path)


def _damaged(pristine: dict[str, bytes], case: str, folder: Path, directory: bool) -> Path:
    content = dict(pristine)
    doc = json.loads(content[INDEX])
    doc["files"] = CASES[case][0]([dict(f) for f in doc["files"]])
    content[INDEX] = json.dumps(doc).encode()
    return D.write_archive(folder / "damaged.mzpeak", content, directory=directory)


@pytest.mark.parametrize("directory", [False, True], ids=["zip", "directory"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_contradictory_index_fails_to_open(
    case: str, directory: bool, pristine: dict[str, bytes], tmp_path: Path
) -> None:
    path = _damaged(pristine, case, tmp_path, directory)
    with pytest.raises(ArchiveError) as raised:
        open_archive(path)
    message = str(raised.value)
    assert len(message.splitlines()) == 1 and message.startswith(f"{path}: "), message
    assert CASES[case][1] in message, message
    errors = [p for p in validate(path) if p.severity == ERROR]
    assert errors, case


@pytest.mark.slow
@pytest.mark.parametrize(
    "case", ["data listed as metadata too, first", "spectrum data and metadata swapped"]
)
def test_info_and_validate_exit_1_on_a_contradictory_index(
    case: str, pristine: dict[str, bytes], tmp_path: Path
) -> None:
    path = _damaged(pristine, case, tmp_path, False)
    one_line_error(run_cli("info", str(path)), str(path), CASES[case][1])
    checked = run_cli("validate", str(path))
    assert checked.returncode == 1 and not checked.stderr
    errors = [line for line in checked.stdout.splitlines() if line.startswith(f"{path}: error: ")]
    assert errors, checked.stdout


def test_neighbouring_damage_is_already_caught(pristine: dict[str, bytes], tmp_path: Path) -> None:
    """A listed member absent from the ZIP, a metadata member replaced by another entity's."""
    content = dict(pristine)
    del content[CHROM_DATA]
    path = D.write_archive(tmp_path / "lost.mzpeak", content)
    with pytest.raises(ArchiveError, match=f"lists {CHROM_DATA}, which the archive"):
        open_archive(path)
    content = dict(pristine)
    content[SPECTRA_META] = pristine[CHROM_META]
    path = D.write_archive(tmp_path / "foreign.mzpeak", content)
    with pytest.raises(ArchiveError, match=f"{SPECTRA_META} is listed as spectrum metadata"):
        open_archive(path)
    assert [p for p in validate(path) if p.severity == ERROR]
