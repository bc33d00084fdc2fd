"""Quantifying a repository's runs holds a wave of runs in the caller, not every run: the
caller's peak memory barely grows from 8 runs to 32 once runs pass in waves, where holding
them all grows it by their spectrum tables; the table is the same either way, with a run that
cannot be opened named in the middle of the waves. Peak memory is tracemalloc's (numpy's and
pandas' allocations): a counter the machine's load does not move.

The runs are 32 names of one real run replicated to 3,800 spectra (FeatureFinderMetaboIdent x10,
a 10 MB archive)."""

from __future__ import annotations

import importlib
import tracemalloc

import dask
import pandas as pd
import pytest

from mzpeak_dask.analysis import quantify

from ..export.builds import METABO
from ..helpers.repository import linked_copies, replicated_archive
from .test_quantify import targets_for

pytestmark = pytest.mark.slow

QUANTIFY = importlib.import_module("mzpeak_dask.analysis.quantify")


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> list:
    root = tmp_path_factory.mktemp("repository")
    return linked_copies(replicated_archive(METABO, root, 10), root, 32)


def _peak(runs: list, targets: pd.DataFrame) -> tuple[int, pd.DataFrame]:
    """Peak traced bytes of quantifying ``runs`` on one thread, and the table."""
    with dask.config.set(scheduler="sync"):
        quantify(runs[:1], targets)  # what a first call loads and keeps
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            result = quantify(runs, targets)
            return tracemalloc.get_traced_memory()[1] - base, result
        finally:
            tracemalloc.stop()


def test_runs_pass_in_waves(repository, monkeypatch) -> None:
    targets = targets_for(METABO)
    growth = {}
    for waves in (False, True):
        if waves:  # waves of about two runs (3,800 spectra each)
            monkeypatch.setattr(QUANTIFY, "OPEN_FIRST", 2)
            monkeypatch.setattr(QUANTIFY, "WAVE_SPECTRA", 7000)
        few, _ = _peak(repository[:8], targets)
        many, _ = _peak(repository, targets)
        growth[waves] = many - few
    # all at once, the 24 runs more held about 5 MB (56 bytes a spectrum) more; in waves,
    # the growth is their rows
    assert growth[False] > 3_000_000, growth
    assert growth[True] < growth[False] / 4, growth


def test_waves_give_the_same_table(repository, monkeypatch, tmp_path) -> None:
    targets = targets_for(METABO)
    missing = tmp_path / "missing.mzpeak"
    runs = [*repository[:5], missing, *repository[5:10]]
    whole = quantify(runs, targets)
    monkeypatch.setattr(QUANTIFY, "OPEN_FIRST", 2)
    monkeypatch.setattr(QUANTIFY, "WAVE_SPECTRA", 7000)
    waved = quantify(runs, targets)
    pd.testing.assert_frame_equal(waved, whole)
    assert waved["run"].unique().tolist() == [str(r) for r in runs if r != missing]
    assert waved.attrs["failed"] == whole.attrs["failed"]
    assert len(waved.attrs["failed"]) == 1 and str(missing) in waved.attrs["failed"][0]
