"""A userParam's declared XML Schema type decides its value's type, whatever the lexical form:
``xsd:double`` / ``xsd:float`` give a float (``0`` is 0.0, not the integer 0), ``xsd:integer``
/ ``int`` / ``long`` an int, ``xsd:string`` text. Checked through the archive and back, on a
spectrum and on the run, with both mzML parsers."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mzpeak_dask import ConvertOptions, convert, open_archive

from ..conftest import INLINE
from ..helpers.generated_runs import generated_mzml

# (name, declared type, lexical value, expected value)
PARAMS = [
    ("double zero", "xsd:double", "0", 0.0),
    ("double one", "xsd:double", "1", 1.0),
    ("double minus zero", "xsd:double", "-0", -0.0),
    ("double exponent", "xsd:double", "1E3", 1000.0),
    ("double fraction", "xsd:double", "2.5", 2.5),
    ("float zero", "xsd:float", "0", 0.0),
    ("decimal", "xsd:decimal", "12", 12.0),
    ("integer zero", "xsd:integer", "0", 0),
    ("int", "xsd:int", "7", 7),
    ("long", "xsd:long", "9007199254740993", 9007199254740993),  # not a double
    ("string zero", "xsd:string", "0", "0"),
]


def _same(value: object, expected: object) -> bool:
    if type(value) is not type(expected):
        return False
    if isinstance(expected, float):
        return value == expected and math.copysign(1, value) == math.copysign(1, expected)
    return value == expected


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    declared = [(name, kind, text) for name, kind, text, _ in PARAMS]
    folder = tmp_path_factory.mktemp("declared")
    return generated_mzml(folder / "typed.mzML", spectrum_params=declared, run_params=declared)


@pytest.mark.parametrize("parser", ["lean", "pyteomics"])
def test_declared_types_survive_the_archive(source: Path, tmp_path: Path, parser: str) -> None:
    output = tmp_path / "typed.mzpeak"
    convert(source, output, ConvertOptions(parser=parser), cluster=INLINE)
    with open_archive(output) as archive:
        spectrum = {p.name: p.value for p in archive[0].params if p.accession is None}
        run = {p["name"]: p["value"] for p in archive.file_metadata["run"]["parameters"]}
        stored = archive.table("spectrum").column("parameters")[0].as_py()
    slots = {p["name"]: p["value"] for p in stored if p["accession"] is None}
    wrong = []
    for name, kind, text, expected in PARAMS:
        for where, got in (("spectrum", spectrum.get(name)), ("run", run.get(name))):
            if not _same(got, expected):
                wrong.append(f"{where} {name} ({kind} {text!r}): {got!r}")
        slot = {float: "float", int: "integer", str: "string"}[type(expected)]
        if slots[name][slot] is None:
            wrong.append(f"stored {name}: {slots[name]}")
    assert not wrong, wrong
