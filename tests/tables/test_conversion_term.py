"""The conversion's data-processing step is labelled with PSI-MS ``MS:1000530 file format
conversion`` (the vocabulary has conversion terms to mzML, mzMLb, ... under it, none to mzPeak),
not ``MS:1000544 Conversion to mzML``, which says the output is mzML."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import psims

from mzpeak_dask import open_archive
from mzpeak_dask.tables.file_metadata import PROCESSING_ID

from ..helpers.cli import run_cli
from ..helpers.generated_runs import generated_mzml

PSI_MS = Path(psims.__file__).parent / "controlled_vocabulary" / "vendor" / "psi-ms.obo.gz"


def _stanza(accession: str) -> str:
    """The ``[Term]`` stanza of ``accession`` in psims' bundled psi-ms.obo."""
    text = gzip.decompress(PSI_MS.read_bytes()).decode()
    found = re.search(rf"\[Term\]\nid: {re.escape(accession)}\n(.*?)\n\n", text, re.S)
    assert found, accession
    return found.group(1)


def test_the_term_is_the_vocabulary_s_file_format_conversion() -> None:
    stanza = _stanza("MS:1000530")
    assert "name: file format conversion\n" in stanza
    assert "is_a: MS:1000452 ! data transformation" in stanza
    assert "is_obsolete" not in stanza
    assert "is_a: MS:1000530 ! file format conversion" in _stanza("MS:1000544")  # a child


def test_the_archive_names_its_conversion_a_file_format_conversion(tmp_path: Path) -> None:
    source = generated_mzml(tmp_path / "run.mzML", chromatograms=[np.array([0.1, 0.2])])
    output = tmp_path / "run.mzpeak"
    result = run_cli("convert", "--cluster", "inline", "-q", str(source), str(output))
    assert result.returncode == 0, result.stderr
    with open_archive(output) as archive:
        processing = archive.file_metadata["data_processing_method_list"]
    ours = next(dp for dp in processing if dp["id"] == PROCESSING_ID)
    terms = [(p["accession"], p["name"]) for m in ours["methods"] for p in m["parameters"]]
    assert ("MS:1000530", "file format conversion") in terms
    assert all(accession != "MS:1000544" for accession, _ in terms)
    # the source's own processing (its conversion to mzML) is kept as it was
    theirs = [dp for dp in processing if dp["id"] != PROCESSING_ID]
    assert [p["accession"] for dp in theirs for m in dp["methods"] for p in m["parameters"]] == [
        "MS:1000544"
    ]
