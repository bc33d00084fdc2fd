"""A folder of runs (a batch's output, say) stands for every run under it, in the analysis'
Python calls and its commands: archives, Zarr stores, unpacked archives, searched recursively
in name order, hidden names and other files left out; a folder without runs is one line
naming it."""

from __future__ import annotations

import os
import shutil

import pandas as pd
import pytest

from mzpeak_dask import cli
from mzpeak_dask.analysis import open_runs, quantify, xic
from mzpeak_dask.analysis.run_folders import expand_folders
from mzpeak_dask.errors import InputError

from ..conftest import DATA
from ..export.builds import SMALL
from .test_quantify import targets_for

pytestmark = pytest.mark.slow  # the shared archives and their export are built first

UNPACKED = DATA / "HUPO-PSI_mzPeak" / "small.unpacked.mzpeak"


@pytest.fixture
def repository(exported, tmp_path):
    """``repo/``: a.mzpeak, an unpacked archive, sub/b.mzpeak and sub/store.zarr (runs), and
    what is not a run: the batch's catalog and notes, and a hidden staging folder whose
    archive is garbage."""
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    shutil.copyfile(exported.archives["small.point"], repo / "a.mzpeak")
    shutil.copyfile(exported.archives["small.chunked"], repo / "sub" / "b.mzpeak")
    shutil.copytree(exported.store, repo / "sub" / "store.zarr")
    shutil.copytree(UNPACKED, repo / "unpacked.mzpeak", copy_function=shutil.copyfile)
    os.chmod(repo / "unpacked.mzpeak", 0o755)
    (repo / ".staging").mkdir()
    (repo / ".staging" / "half.mzpeak").write_bytes(b"not yet an archive")
    (repo / "notes.txt").write_text("converted on Monday\n")
    pd.DataFrame({"archive": ["a.mzpeak"]}).to_parquet(repo / "catalog.parquet")
    runs = [  # in the order of their paths
        repo / "a.mzpeak",
        repo / "sub" / "b.mzpeak",
        repo / "sub" / "store.zarr",
        repo / "unpacked.mzpeak",
    ]
    return repo, [str(r) for r in runs]


def test_a_damaged_run_folder_is_named_not_passed_over(repository) -> None:
    repo, runs = repository
    damaged = repo / "sub" / "damaged.mzpeak"  # an unpacked archive without its index
    damaged.mkdir()
    (damaged / "spectra_data.parquet").write_bytes(b"PAR1")
    damaged = str(damaged)
    assert expand_folders([repo]) == sorted([*runs, damaged])
    targets = targets_for(SMALL)
    result, want = quantify(repo, targets), quantify(runs, targets)
    [line] = result.attrs["failed"]
    assert line.startswith(damaged) and "\n" not in line
    assert result["run"].tolist() == want["run"].tolist()  # every other run's rows kept


def test_a_folder_stands_for_the_runs_under_it(repository) -> None:
    repo, runs = repository
    assert expand_folders([str(repo)]) == runs
    by_folder, by_name = open_runs(repo), open_runs(runs)
    assert [r.name for r in by_folder] == [r.name for r in by_name]
    assert len(by_folder) > len(runs)  # the store holds several runs
    targets = targets_for(SMALL)
    pd.testing.assert_frame_equal(quantify(repo, targets), quantify(runs, targets))
    got, want = xic([repo], [445.12], ppm=10), xic(runs, [445.12], ppm=10)
    assert list(got) == list(want)
    for name in want:
        pd.testing.assert_frame_equal(got[name], want[name])


def test_the_quantify_command_takes_a_folder(repository, tmp_path, capsys) -> None:
    repo, runs = repository
    targets = tmp_path / "targets.csv"
    targets_for(SMALL).to_csv(targets, index=False)
    output = tmp_path / "q.parquet"
    argv = ["quantify", str(repo), "--targets", str(targets), "--output", str(output)]
    assert cli.main(argv) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(output), quantify(runs, targets))
    capsys.readouterr()


def test_a_folder_without_runs_is_named(repository, tmp_path, capsys) -> None:
    repo, runs = repository
    empty = tmp_path / "empty"
    (empty / "deeper").mkdir(parents=True)
    (empty / "deeper" / "notes.txt").write_text("nothing converted yet\n")
    with pytest.raises(InputError, match=f"{empty}: no mzPeak archive or Zarr store in it"):
        open_runs([runs[0], empty])
    targets = targets_for(SMALL)
    result = quantify([runs[0], empty], targets)  # the other runs' rows are kept
    assert set(result["run"]) == {runs[0]}
    [line] = result.attrs["failed"]
    assert line.startswith(f"{empty}: no mzPeak archive or Zarr store in it")
    output = tmp_path / "q.parquet"
    csv = tmp_path / "targets.csv"
    targets.to_csv(csv, index=False)
    argv = ["quantify", str(empty), "--targets", str(csv), "--output", str(output)]
    assert cli.main(argv) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and str(empty) in errors[0], errors
