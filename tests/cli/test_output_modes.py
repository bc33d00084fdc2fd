"""Every output a command writes gets the mode any new file gets under the user's umask, so a
lab's shared group or a web server serving the folder reads it like any other file. (A file
made by ``tempfile.mkstemp`` and renamed into place stays its owner's alone.) Only the batch's
state, which names its inputs (URLs among them), is kept to its owner on purpose."""

from __future__ import annotations

import stat

import pandas as pd

from ..conftest import BUNDLED
from ..helpers.cli import assert_clean, one_line_error, run_cli

UMASK = 0o002  # a lab's shared group: new files 0664, new folders 0775
OWNER_ONLY = {"batch/batch_state.sqlite"}


def _run(*args: str) -> None:
    done = run_cli(*args, "--cluster", "inline", "-q", umask=UMASK)
    assert done.returncode == 0, done.stderr


def test_every_output_gets_the_mode_of_the_umask(tmp_path) -> None:
    out, repository = tmp_path / "out", tmp_path / "repository"
    out.mkdir()
    repository.mkdir()
    (repository / "small.mzML").write_bytes((BUNDLED / "small.mzML").read_bytes())
    targets = tmp_path / "targets.csv"
    pd.DataFrame(
        {"peak_label": ["a"], "mz_mean": [445.12], "mz_width": [10], "rt_min": [0], "rt_max": [60]}
    ).to_csv(targets, index=False)
    run = str(out / "run.mzpeak")
    _run("convert", str(BUNDLED / "small.mzML"), run)
    _run("convert", str(BUNDLED / "small.mzML"), str(out / "unpacked.mzpeak"), "--unpacked")
    _run("batch", str(repository), str(out / "batch"))
    _run("export-zarr", run, str(out / "runs.zarr"))
    _run("export-zarr", run, str(out / "single.zarr"), "--single-file")
    _run("quantify", run, "--targets", str(targets), "--output", str(out / "q.parquet"),
         "--plot", str(out / "heatmap.png"))  # fmt: skip
    _run("quantify", run, "--targets", str(targets), "--output", str(out / "q.csv"))
    _run("ion-map", run, "--mz-bins", "100:2000:100", "--rt-bins", "0:40:50",
         "--plot", str(out / "map.png"))  # fmt: skip
    _run("xic", run, "--mz", "445.12", "--plot", str(out / "xic.png"))
    modes = {
        str(p.relative_to(out)): stat.S_IMODE(p.stat().st_mode)
        for p in out.rglob("*")
        if not p.name.startswith(".")
    }
    for name in ("single.zarr/run.zarr.zip", "q.parquet", "q.csv", "heatmap.png", "map.png"):
        assert name in modes, sorted(modes)
    wrong = {
        name: oct(mode)
        for name, mode in modes.items()
        if name not in OWNER_ONLY and mode != (0o775 if (out / name).is_dir() else 0o664)
    }
    assert not wrong, wrong
    assert all(modes[name] == 0o600 for name in OWNER_ONLY)


def test_a_picture_that_cannot_be_written_is_one_line_and_leaves_nothing(tmp_path) -> None:
    run = tmp_path / "run.mzpeak"
    _run("convert", str(BUNDLED / "small.mzML"), str(run))
    missing = tmp_path / "missing" / "xic.png"
    done = run_cli("xic", str(run), "--mz", "445.12", "--plot", str(missing), "-q")
    one_line_error(done, str(missing), "cannot write there")
    assert_clean(tmp_path, run)


def test_an_output_that_cannot_be_written_is_refused_before_any_work(tmp_path) -> None:
    """The output is checked first: the runs named here do not exist, and the one line is
    about the output (a quantification of a thousand runs is not lost to a typo in it)."""
    missing = str(tmp_path / "missing" / "out.csv")
    picture = str(tmp_path / "missing" / "out.png")
    for argv, named in (
        (["quantify", "none.mzpeak", "--targets", "none.csv", "--output", missing], missing),
        (["quantify", "none.mzpeak", "--targets", "none.csv", "--output", "q.csv",
          "--plot", picture], picture),
        (["xic", "none.mzpeak", "--mz", "445.12", "--output", missing], missing),
        (["tic", "none.mzpeak", "--plot", picture], picture),
        (["ion-map", "none.mzpeak", "--mz-bins", "100:200:10", "--rt-bins", "0:1:10",
          "--plot", picture], picture),
    ):  # fmt: skip
        one_line_error(run_cli(*argv, cwd=tmp_path), named, "cannot write there")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
