"""Bad input: one clear line naming the file (and spectrum), a non-zero exit without a
traceback, and nothing left at OUTPUT (nor any temporary file beside it)."""

from __future__ import annotations

import base64
import re
import zlib
from pathlib import Path

import pytest

from mzpeak_dask import (
    ConvertOptions,
    InputError,
    OutputError,
    SpectrumDecodeError,
    UnsupportedFormatError,
    convert,
    open_archive,
)

from .conftest import BUNDLED, DATA, INLINE
from .helpers.batch_inputs import huge_spectrum_mzml
from .helpers.cli import assert_clean, one_line_error, run_cli
from .helpers.hostile_inputs import corrupt_binary

pytestmark = pytest.mark.slow  # each runs the command line in a fresh process

SMALL = BUNDLED / "small.mzML"


def test_missing_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        convert(tmp_path / "absent.mzML", tmp_path / "out.mzpeak", cluster=INLINE)
    result = run_cli(
        "convert",
        str(tmp_path / "absent.mzML"),
        str(tmp_path / "out.mzpeak"),
        "--cluster",
        "inline",
    )
    one_line_error(result, "absent.mzML", "no such file")
    assert_clean(tmp_path)


def test_directory_as_input(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    with pytest.raises(InputError, match="is a directory"):
        convert(folder, tmp_path / "out.mzpeak", cluster=INLINE)
    assert_clean(tmp_path, folder)


def test_not_ms_data(tmp_path: Path) -> None:
    path = tmp_path / "notes.mzML"  # the suffix lies; the content decides
    path.write_text("these are lab notes, not a mass spectrum\n" * 20)
    with pytest.raises(UnsupportedFormatError, match="not a recognised MS data file"):
        convert(path, tmp_path / "out.mzpeak", cluster=INLINE)
    one_line_error(
        run_cli("convert", str(path), str(tmp_path / "out.mzpeak"), "--cluster", "inline"),
        "notes.mzML",
        "not a recognised MS data file",
    )
    assert_clean(tmp_path, path)


def test_truncated_mzml(tmp_path: Path) -> None:
    path = tmp_path / "truncated.mzML"
    data = SMALL.read_bytes()
    path.write_bytes(data[: len(data) * 6 // 10])
    with pytest.raises(InputError, match="truncated"):
        convert(path, tmp_path / "out.mzpeak", cluster=INLINE)
    assert_clean(tmp_path, path)


def test_corrupt_base64_names_the_spectrum(tmp_path: Path) -> None:
    path = corrupt_binary(tmp_path, 5, lambda b64: b64[:40] + "!*?" + b64[43:])
    with pytest.raises(SpectrumDecodeError, match=r"corrupt\.mzML: spectrum .*scan=6: .*base64"):
        convert(path, tmp_path / "out.mzpeak", cluster=INLINE)
    one_line_error(
        run_cli("convert", str(path), str(tmp_path / "out.mzpeak"), "--cluster", "inline"),
        "corrupt.mzML",
        "scan=6",
    )
    assert_clean(tmp_path, path)


def test_corrupt_zlib_names_the_spectrum(tmp_path: Path) -> None:
    garbage = base64.b64encode(zlib.compress(b"x" * 400)[:-7] + b"\x00" * 7).decode()
    path = corrupt_binary(tmp_path, 7, lambda _: garbage)
    with pytest.raises(SpectrumDecodeError, match=r"spectrum .*scan=8: corrupt zlib"):
        convert(path, tmp_path / "out.mzpeak", cluster=INLINE)
    assert_clean(tmp_path, path)


def test_zlib_bomb_is_refused(tmp_path: Path) -> None:
    """A spectrum declaring 1,000 points whose payload inflates to 80 MB."""
    path = huge_spectrum_mzml(tmp_path / "bomb.mzML", 10_000_000, declared=1_000)
    with pytest.raises(
        SpectrumDecodeError,
        match=r"bomb\.mzML: spectrum scan=1: zlib data "
        r"inflates past",
    ):
        convert(path, tmp_path / "out.mzpeak", cluster=INLINE)
    assert_clean(tmp_path, path)


def test_corrupt_numpress_does_not_abort_the_process(tmp_path: Path) -> None:
    """pynumpress aborts the interpreter on this payload; the converter reports it."""
    path = DATA / "openms" / "FileFilter_39_input_corrupt.mzML"
    with pytest.raises(
        SpectrumDecodeError,
        match=r"FileFilter_39_input_corrupt\.mzML: "
        r"spectrum spectrum=1: .*numpress",
    ):
        convert(path, tmp_path / "out.mzpeak", cluster=INLINE)
    one_line_error(
        run_cli("convert", str(path), str(tmp_path / "out.mzpeak"), "--cluster", "inline"),
        "FileFilter_39_input_corrupt.mzML",
        "spectrum=1",
    )
    assert_clean(tmp_path)


def test_broken_indexed_mzml_is_refused(tmp_path: Path) -> None:
    """Its run is empty, its index lists two spectra and a chromatogram, and an indexList
    follows </mzML> (MANIFEST: it must fail). It used to become an empty archive, exit 0."""
    path = DATA / "openms" / "IndexedmzMLFile_2_broken.mzML"
    with pytest.raises(InputError, match=r"IndexedmzMLFile_2_broken\.mzML: malformed mzML"):
        convert(path, tmp_path / "out.mzpeak", cluster=INLINE)
    one_line_error(
        run_cli("convert", str(path), str(tmp_path / "out.mzpeak"), "--cluster", "inline"),
        "IndexedmzMLFile_2_broken.mzML",
        "opens <mzML> but ends with </indexedmzML>",
    )
    assert_clean(tmp_path)


def test_index_listing_missing_spectra_is_refused(tmp_path: Path) -> None:
    """A well-formed indexed mzML whose spectra were lost: its index still lists them."""
    text = SMALL.read_text()
    text = text[: text.index("<spectrum ")] + text[text.index("</spectrumList>") :]
    index_at = len(text[: text.index("<indexList")].encode())
    text = re.sub(r"<indexListOffset>\d+<", f"<indexListOffset>{index_at}<", text)
    path = tmp_path / "hollow.mzML"
    path.write_text(text)
    with pytest.raises(InputError, match=r"hollow\.mzML: its offset index lists 48 spectra"):
        convert(path, tmp_path / "out.mzpeak", cluster=INLINE)
    assert_clean(tmp_path, path)


def test_unwritable_output_location(tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "folder" / "out.mzpeak"
    with pytest.raises(OutputError, match="does not exist"):
        convert(SMALL, target, cluster=INLINE)
    blocker = tmp_path / "file"
    blocker.write_text("")
    one_line_error(
        run_cli("convert", str(SMALL), str(blocker / "out.mzpeak"), "--cluster", "inline"),
        "out.mzpeak",
    )
    assert_clean(tmp_path, blocker)


def test_existing_output_needs_overwrite(tmp_path: Path) -> None:
    output = tmp_path / "out.mzpeak"
    output.write_bytes(b"an older archive")
    with pytest.raises(OutputError, match="already exists"):
        convert(SMALL, output, cluster=INLINE)
    assert output.read_bytes() == b"an older archive"
    convert(SMALL, output, ConvertOptions(overwrite=True), cluster=INLINE)
    with open_archive(output) as archive:
        assert len(archive) == 48
    assert_clean(tmp_path, output)
