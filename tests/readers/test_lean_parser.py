"""The lean mzML parser (the default) against ``--parser pyteomics``: the same archive, byte
for byte, from every mzML and mzMLb input of ../shared/data, the same records where a document
leans on pyteomics' rules for params, and the same one-line errors from damaged files."""

from __future__ import annotations

import base64
import dataclasses
import zlib
from pathlib import Path

import numpy as np
import pytest

from mzpeak_dask import ConvertOptions, MzPeakDaskError, convert
from mzpeak_dask.readers import SPECTRA, MzMLFormat
from mzpeak_dask.readers.base import ItemRange

from ..conftest import DATA, INLINE, input_files
from ..helpers.archives import member_digests
from ..helpers.hostile_inputs import SMALL, corrupt_binary, spectrum_span

PARSERS = ("lean", "pyteomics")
MZML_INPUTS = [p for p in input_files() if not p.name.endswith((".mzXML", ".mgf"))]


def _plain(x):  # noqa: ANN001, ANN202 - records as comparable values (arrays by their bytes)
    if isinstance(x, np.ndarray):
        return ("array", x.dtype.str, x.tobytes())
    if dataclasses.is_dataclass(x):
        return (type(x).__name__, *(_plain(getattr(x, f.name)) for f in dataclasses.fields(x)))
    if isinstance(x, list):
        return [_plain(v) for v in x]
    return (type(x).__name__, x)


def _records(path: Path, parser: str) -> list:
    survey = MzMLFormat.survey(str(path))
    offsets = survey.spectrum_offsets
    items = ItemRange(SPECTRA, 0, survey.spectrum_count, int(offsets[0]), int(offsets[-1]))
    return list(MzMLFormat.read(str(path), items, {**survey.hints, "parser": parser}))


@pytest.mark.slow
@pytest.mark.parametrize("path", MZML_INPUTS, ids=lambda p: p.name)
def test_archives_are_byte_identical(path: Path, tmp_path: Path) -> None:
    digests = {}
    for parser in PARSERS:
        output = tmp_path / f"{parser}.mzpeak"
        convert(path, output, ConvertOptions(parser=parser), cluster=INLINE)
        digests[parser] = member_digests(output)
    assert digests["lean"] == digests["pyteomics"]


def _edited_small(tmp_path: Path) -> Path:
    """small.mzML with params that lean on pyteomics' rules: a name repeated with another unit,
    a userParam typed ``int``, a referenceable group with a
    repeated param, a userParam "ms level", a charge state of 0 (OpenMS writes it), a unit
    accession without a unit CV, and a PSI-MS string term whose value looks like a number."""
    text = SMALL.read_text()
    group = (
        '<referenceableParamGroup id="Twice">'
        '<userParam name="lamp" value="1.5"/><userParam name="lamp" value="2"/>'
        '<cvParam cvRef="MS" accession="MS:1000512" name="filter string" value="42"/>'
        "</referenceableParamGroup>"
    )
    text = text.replace("</referenceableParamGroupList>", group + "</referenceableParamGroupList>")
    text = text.replace(
        '<referenceableParamGroupList count="1">', '<referenceableParamGroupList count="2">'
    )
    start, _ = spectrum_span(text, 2)
    at = text.index(">", start) + 1
    extra = (
        '<cvParam cvRef="MS" accession="MS:1000504" name="base peak m/z" value="7" '
        'unitCvRef="MS" unitAccession="MS:1000040" unitName="m/z"/>'
        '<cvParam cvRef="MS" accession="MS:1000504" name="base peak m/z" value="8" '
        'unitCvRef="UO" unitAccession="UO:0000031" unitName="minute"/>'
        '<userParam name="counts" value="12" type="int"/>'
        '<referenceableParamGroupRef ref="Twice"/>'
        '<userParam name="lamp" value="x"/>'
        '<cvParam cvRef="MS" accession="MS:1000285" name="total ion current" value="9" '
        'unitAccession="MS:1000131"/>'
    )
    text = text[:at] + extra + text[at:]
    start, end = spectrum_span(text, 2)
    body = text[start:end].replace(
        '<cvParam cvRef="MS" accession="MS:1000744"',
        '<cvParam cvRef="MS" accession="MS:1000041" name="charge state" value="0"/>'
        '<cvParam cvRef="MS" accession="MS:1000744"',
    )
    path = tmp_path / "edited.mzML"
    path.write_text(text[:start] + body + text[end:])
    return path


def test_params_are_read_by_pyteomics_rules(tmp_path: Path) -> None:
    path = _edited_small(tmp_path)
    lean, pyteomics = (_records(path, parser) for parser in PARSERS)
    assert [_plain(r) for r in lean] == [_plain(r) for r in pyteomics]
    spectrum = lean[2]
    by_name: dict[str, list] = {}
    for p in spectrum.params:
        by_name.setdefault(p.name, []).append(p)
    # one entry per name at its first place, the first one's unit for every value
    assert [(p.value, p.unit) for p in by_name["base peak m/z"]] == [
        (7.0, "MS:1000040"),
        (8.0, "MS:1000040"),
        (736.637084960938, "MS:1000040"),
    ]
    assert by_name["counts"][0].value == 12
    # the group's repeated param comes first: its values, then the spectrum's own
    assert [p.value for p in by_name["lamp"]] == [1.5, 2.0, "x"]
    assert [p.value for p in by_name["filter string"]] == ["42"]
    assert by_name["total ion current"][-1].unit is None  # no unitCvRef nor unitName
    window = spectrum.precursors[0].isolation_window
    assert [(p.name, p.value) for p in window if p.accession is None] == [("ms level", 1)]
    charge = [p for p in spectrum.precursors[0].selected_ions[0].params if p.name == "charge state"]
    assert [(p.value, type(p.value)) for p in charge] == [(0, int)]


def test_a_param_named_as_an_attribute_is_kept(tmp_path: Path) -> None:
    """pyteomics files such a param under the attribute's key (and fails on "index", an int
    attribute); the lean parser keeps it as a param."""
    text = SMALL.read_text()
    start, _ = spectrum_span(text, 2)
    at = text.index(">", start) + 1
    path = tmp_path / "named.mzML"
    path.write_text(text[:at] + '<userParam name="index" value="3"/>' + text[at:])
    spectrum = _records(path, "lean")[2]
    assert spectrum.position == 2 and spectrum.id.endswith("scan=3")
    assert [p.value for p in spectrum.params if p.name == "index"] == [3.0]


def _malformed_xml(tmp_path: Path) -> Path:
    text = SMALL.read_text()
    start, end = spectrum_span(text, 4)
    body = text[start:end].replace("</scanList>", "", 1)
    path = tmp_path / "malformed.mzML"
    path.write_text(text[:start] + body + text[end:])
    return path


def _truncated(tmp_path: Path) -> Path:
    path = tmp_path / "truncated.mzML"
    data = SMALL.read_bytes()
    path.write_bytes(data[: len(data) * 6 // 10])
    return path


def _bad_attribute(tmp_path: Path) -> Path:
    text = SMALL.read_text()
    start, _ = spectrum_span(text, 3)
    text = text[:start] + text[start:].replace(
        'defaultArrayLength="1006"', 'defaultArrayLength="x"', 1
    )
    path = tmp_path / "attribute.mzML"
    path.write_text(text)
    return path


DAMAGED = {
    "corrupt base64": lambda t: corrupt_binary(t, 5, lambda b: b[:40] + "!*?" + b[43:]),
    "corrupt zlib": lambda t: corrupt_binary(
        t, 7, lambda _: base64.b64encode(zlib.compress(b"x" * 400)[:-7] + bytes(7)).decode()
    ),
    "corrupt numpress": lambda t: DATA / "openms" / "FileFilter_39_input_corrupt.mzML",
    "broken index": lambda t: DATA / "openms" / "IndexedmzMLFile_2_broken.mzML",
    "malformed XML": _malformed_xml,
    "truncated": _truncated,
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_damaged_files_give_the_same_error(case: str, tmp_path: Path) -> None:
    path = DAMAGED[case](tmp_path)
    errors = []
    for parser in PARSERS:
        with pytest.raises(MzPeakDaskError) as caught:
            convert(
                path, tmp_path / f"{parser}.mzpeak", ConvertOptions(parser=parser), cluster=INLINE
            )
        errors.append((type(caught.value), str(caught.value)))
        assert not (tmp_path / f"{parser}.mzpeak").exists()
    assert errors[0] == errors[1]
    message = errors[0][1]
    assert "\n" not in message and path.name in message


def test_an_attribute_that_does_not_parse_names_the_spectrum(tmp_path: Path) -> None:
    path = _bad_attribute(tmp_path)
    with pytest.raises(
        MzPeakDaskError, match=r"attribute\.mzML: spectrum .*scan=4: malformed mzML"
    ):
        convert(path, tmp_path / "out.mzpeak", cluster=INLINE)
    assert not (tmp_path / "out.mzpeak").exists()
