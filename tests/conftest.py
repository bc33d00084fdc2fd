"""Shared fixtures: the real data in ../shared/data, and in-process conversion options."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from mzpeak_dask import ClusterOptions

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
BUNDLED = ROOT / "tests" / "data"

INPUT_SUFFIXES = (".mzML", ".mzML.gz", ".mzML.bz2", ".mzXML", ".mgf", ".mzMLb")
BROKEN = {"FileFilter_39_input_corrupt.mzML", "IndexedmzMLFile_2_broken.mzML"}


def input_files() -> list[Path]:
    """Every MS input under ../shared/data except the deliberately broken ones."""
    files = [p for p in DATA.rglob("*") if p.is_file() and p.name.endswith(INPUT_SUFFIXES)]
    return sorted(p for p in files if p.name not in BROKEN)


INLINE = ClusterOptions(cluster="inline")


@pytest.fixture
def inline() -> ClusterOptions:
    return INLINE


@pytest.fixture(autouse=True)
def _quiet_psims_handles():
    # psims leaves a file handle of its bundled ontology open; not ours to fix
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        yield
