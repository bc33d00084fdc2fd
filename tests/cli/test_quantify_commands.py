"""``mzpeak-dask quantify`` and ``ion-map``: outputs, exit codes, one-line errors."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from mzpeak_dask import cli
from mzpeak_dask.analysis import quantify

from ..analysis.test_quantify import targets_for
from ..export.builds import SMALL

pytestmark = pytest.mark.slow  # the shared archives and their export are built first


def test_quantify_writes_the_table_and_heatmap(exported, tmp_path, capsys) -> None:
    targets = tmp_path / "targets.csv"
    targets_for(SMALL).to_csv(targets, index=False)
    runs = [str(exported.archives["small.chunked"]), str(exported.store / "small.point")]
    want = quantify(runs, targets)
    for suffix in ("parquet", "csv"):
        output, plot = tmp_path / f"q.{suffix}", tmp_path / "heatmap.png"
        argv = ["quantify", *runs, "--targets", str(targets), "--output", str(output)]
        assert cli.main([*argv, "--plot", str(plot)]) == 0
        got = pd.read_parquet(output) if suffix == "parquet" else pd.read_csv(output)
        pd.testing.assert_frame_equal(got, want, check_dtype=suffix == "parquet")
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    capsys.readouterr()


def test_a_heatmap_of_many_runs_with_long_names_fits_them(exported, tmp_path, capsys) -> None:
    """60 runs with names of 60 characters and one target: every label and the colour bar's
    drawn inside the picture, with no layout warning on the way (one drew a strip 2.35
    inches wide, cut its labels and warned "Tight layout not applied")."""
    folder = tmp_path / "runs"
    folder.mkdir()
    for k in range(60):
        os.link(exported.archives["small.chunked"], folder / f"{k:02d}_{'x' * 50}.mzpeak")
    targets = tmp_path / "targets.csv"
    targets_for(SMALL).head(1).to_csv(targets, index=False)
    plot = tmp_path / "heatmap.png"
    argv = ["quantify", str(folder), "--targets", str(targets), "--output", str(tmp_path / "q.csv")]
    assert cli.main([*argv, "--plot", str(plot), "-q"]) == 0  # a warning fails here
    assert capsys.readouterr().err == ""
    from matplotlib.image import imread

    width, height = imread(plot).shape[1::-1]
    assert width > 6 * 120 * 0.9 and height > 60 * 0.35 * 120 * 0.9, (width, height)


def test_an_unreadable_run_exits_1_after_the_others_are_written(exported, tmp_path, capsys):
    targets = tmp_path / "targets.csv"
    targets_for(SMALL).to_csv(targets, index=False)
    bad = tmp_path / "bad.mzpeak"
    bad.write_bytes(b"not an archive")
    good = str(exported.archives["small.point"])
    output = tmp_path / "q.parquet"
    argv = ["quantify", good, str(bad), "--targets", str(targets), "--output", str(output)]
    assert cli.main(argv) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and str(bad) in errors[0], errors
    got = pd.read_parquet(output)
    assert set(got["run"]) == {good} and len(got) == len(targets_for(SMALL))


def test_no_readable_run_writes_nothing(tmp_path, capsys) -> None:
    targets = tmp_path / "targets.csv"
    targets_for(SMALL).to_csv(targets, index=False)
    bad, missing = tmp_path / "bad.mzpeak", tmp_path / "missing.mzpeak"
    bad.write_bytes(b"not an archive")
    output = tmp_path / "q.parquet"
    argv = ["quantify", str(bad), str(missing), "--targets", str(targets), "--output", str(output)]
    assert cli.main(argv) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 2 and all(line.startswith("error: ") for line in lines), lines
    assert str(bad) in lines[0] and str(missing) in lines[1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.mzpeak", "targets.csv"]


def test_bad_targets_exit_with_one_line_and_no_output(exported, tmp_path, capsys) -> None:
    targets = tmp_path / "targets.csv"
    targets_for(SMALL).assign(rt_unit="hours").to_csv(targets, index=False)
    output = tmp_path / "q.parquet"
    run = str(exported.archives["small.point"])
    assert cli.main(["quantify", run, "--targets", str(targets), "--output", str(output)]) != 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "row 1" in lines[0] and "rt_unit" in lines[0], lines
    assert not output.exists()


def test_ion_map_draws_a_picture(exported, tmp_path, capsys) -> None:
    plot = tmp_path / "map.png"
    for run in (exported.archives["metabo.chunked"], exported.store / "metabo.point"):
        argv = ["ion-map", str(run), "--mz-bins", "100:1000:300", "--rt-bins", "0:20:200"]
        assert cli.main([*argv, "--plot", str(plot)]) == 0
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        plot.unlink()
    argv = ["ion-map", str(exported.archives["metabo.chunked"]), "--mz-bins", "5:1:3"]
    with pytest.raises(SystemExit) as info:
        cli.main([*argv, "--rt-bins", "0:20:200", "--plot", str(plot)])
    assert info.value.code != 0 and not plot.exists()
    assert cli.main(["ion-map", str(exported.store), "--mz-bins", "1:5:3", "--rt-bins",
                     "0:1:2", "--plot", str(plot)]) != 0
    assert "give one run" in capsys.readouterr().err and not plot.exists()


def test_an_ion_map_without_points_says_so(exported, tmp_path, capsys) -> None:
    """Bins no point falls in draw a blank map, and a line says why, even with --quiet."""
    plot = tmp_path / "map.png"
    run = str(exported.archives["metabo.chunked"])
    for rt in ("0:20:200", "500:600:10"):
        argv = ["ion-map", run, "--mz-bins", "100:1000:300", "--rt-bins", rt, "-q"]
        assert cli.main([*argv, "--plot", str(plot)]) == 0
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"{run}: no points of MS1 spectra"), lines
    assert str(plot) in lines[0]
