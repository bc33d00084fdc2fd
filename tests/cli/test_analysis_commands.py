"""The ``export-zarr`` and ``xic`` subcommands of ``mzpeak-dask``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import zarr

from mzpeak_dask import OutputError, cli

pytestmark = pytest.mark.slow  # the shared archives and their export are built first


def run(argv: list[str]) -> int:
    """The command's handler, called as ``mzpeak-dask`` calls it (exceptions propagate)."""
    args = cli.build_parser().parse_args(argv)
    return args.func(args)


def test_export_zarr_command(exported, tmp_path, capsys) -> None:
    archives = [str(exported.archives[n]) for n in ("three.chunked", "maldi.point")]
    store = tmp_path / "cli.zarr"
    assert run(["export-zarr", *archives, str(store), "--cluster", "inline"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and "three.chunked.mzpeak ->" in out[0] and "3 spectra" in out[0]
    with zarr.config.set({"array.rectilinear_chunks": True}):
        group = zarr.open_group(str(store / "maldi.point"), mode="r")
        assert group["mz"].shape == (21_936,) and group.attrs["layout"] == "point"
    with pytest.raises(OutputError) as refused:  # the command prints its flag's wording
        run(["export-zarr", archives[0], str(store), "--cluster", "inline"])
    assert refused.value.command_line.endswith("(use --overwrite to replace it)")
    argv = ["export-zarr", archives[1], str(store), "--cluster", "inline", "--overwrite"]
    assert run([*argv, "--chunk-width", "20", "--compression", "none", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["spectra"] == 1 and result["chunks"] > 10  # 10 chunks at width 50
    with zarr.config.set({"array.rectilinear_chunks": True}):
        group = zarr.open_group(str(store / "maldi.point"), mode="r")
        assert group["mz"].compressors == () and group["mz"].nchunks == result["zarr_chunks"]
        assert group["chunk_lengths"].shape == (result["chunks"],)
    argv = [*argv, "--compression", "zstd", "--zarr-chunk-points", "5000", "--json"]
    assert run(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["zarr_chunks"] == 1  # one spectrum: a Zarr chunk never splits a spectrum


def test_xic_command(exported, tmp_path, capsys) -> None:
    sources = [str(exported.archives["ref.point"]), str(exported.store / "ref.chunked")]
    plot = tmp_path / "xic.png"
    argv = ["xic", *sources, "--mz", "810.4155", "--mz", "524.2648", "--ppm", "10"]
    assert run([*argv, "--rt", "0.05", "0.3", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "== ref.point: 8 spectra, ±10 ppm ==" in out and "== ref.chunked:" in out
    assert "810.4155" in out.splitlines()[1] and "524.2648" in out.splitlines()[1]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert run([*argv, "--json", "--ms-level", "0"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["run"] for line in lines] == ["ref.point", "ref.chunked"]
    assert len(lines[0]["xic"]["index"]) == 48  # every spectrum with --ms-level 0
    assert run([*argv, "--ms-level", "3"]) == 0  # the run has none: said in a line
    out = capsys.readouterr().out
    assert "== ref.point: no spectra of the MS level (and RT range) asked ==" in out
    assert "Empty DataFrame" not in out


def test_xic_output_is_one_long_table_of_every_run(exported, tmp_path, capsys) -> None:
    """--output writes what the Python call returns, one row per run, spectrum and target, as
    Parquet or CSV by the suffix; nothing is printed but the line saying so."""
    from mzpeak_dask.analysis import xic

    sources = [str(exported.archives["ref.point"]), str(exported.store / "ref.chunked")]
    targets = [810.4155, 524.2648]
    want = xic(sources, targets, ppm=10)
    argv = ["xic", *sources, "--mz", "810.4155", "--mz", "524.2648", "--ppm", "10"]
    for suffix in ("parquet", "csv"):
        output = tmp_path / f"xic.{suffix}"
        assert run([*argv, "--output", str(output)]) == 0
        captured = capsys.readouterr()
        assert captured.out == "" and f"written to {output}" in captured.err
        got = pd.read_parquet(output) if suffix == "parquet" else pd.read_csv(output)
        assert list(got.columns) == ["run", "spectrum_index", "time", "mz", "intensity"]
        assert list(got["run"].unique()) == list(want)
        for name, frame in want.items():
            mine = got[got["run"] == name]
            assert len(mine) == len(frame) * len(targets)
            for mz in targets:
                one = mine[mine["mz"] == mz]
                np.testing.assert_array_equal(one["spectrum_index"], frame.index)
                np.testing.assert_allclose(one["time"], frame["time"], rtol=1e-12)
                np.testing.assert_allclose(one["intensity"], frame[mz], rtol=1e-12)
    assert any(want[name][810.4155].max() > 0 for name in want)


def test_tic_command(exported, tmp_path, capsys) -> None:
    """Total-ion and base-peak chromatograms as the Python call computes them: printed, as
    JSON, as one table of every run, and drawn."""
    from mzpeak_dask.analysis import spectrum_stats

    sources = [str(exported.archives["ref.point"]), str(exported.store / "ref.chunked")]
    want = spectrum_stats(sources, rt=(0.05, 0.3))
    assert all(len(frame) and (frame["tic"] > 0).all() for frame in want.values())
    argv = ["tic", *sources, "--rt", "0.05", "0.3"]
    plot, output = tmp_path / "tic.png", tmp_path / "tic.parquet"
    assert run([*argv, "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "== ref.point: 8 spectra ==" in out and "== ref.chunked:" in out
    assert "base_peak_intensity" in out.splitlines()[1]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert run([*argv, "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["run"] for line in lines] == list(want)
    assert lines[0]["tic"]["index"] == want["ref.point"].index.tolist()
    assert run([*argv, "--output", str(output)]) == 0
    got = pd.read_parquet(output)
    cols = ["time", "tic", "base_peak_mz", "base_peak_intensity"]
    assert list(got.columns) == ["run", "spectrum_index", *cols]
    for name, frame in want.items():
        mine = got[got["run"] == name].set_index("spectrum_index")[cols]
        mine.index.name = frame.index.name
        pd.testing.assert_frame_equal(mine, frame[cols])
    assert run(["tic", sources[0], "--ms-level", "3"]) == 0  # the run has none: one line
    out = capsys.readouterr().out
    assert out.strip() == "== ref.point: no spectra of the MS level (and RT range) asked =="


def test_errors_are_one_line(exported, tmp_path, capsys) -> None:
    assert cli.main(["xic", str(tmp_path / "missing.mzpeak"), "--mz", "500"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {tmp_path / 'missing.mzpeak'}: no such archive or Zarr store"]
    archive = str(exported.archives["three.chunked"])
    assert cli.main(["xic", archive, "--mz", "500", "--rt", "5", "1"]) == 2
    assert "RT range is empty" in capsys.readouterr().err


def test_export_zarr_chunk_width_from_config(exported, tmp_path, capsys) -> None:
    """``chunk_width`` of a --config file applies unless --chunk-width is given."""
    config = tmp_path / "narrow.toml"
    config.write_text("[convert]\nchunk_width = 20.0\n")
    archive = str(exported.archives["maldi.point"])
    argv = ["export-zarr", archive, str(tmp_path / "c.zarr"), "--cluster", "inline", "--json"]
    assert run([*argv, "--config", str(config)]) == 0
    narrow = json.loads(capsys.readouterr().out)["chunks"]
    assert run([*argv, "--config", str(config), "--overwrite", "--chunk-width", "50"]) == 0
    wide = json.loads(capsys.readouterr().out)["chunks"]
    assert narrow > wide > 0
    with zarr.config.set({"array.rectilinear_chunks": True}):
        assert zarr.open_group(str(tmp_path / "c.zarr" / "maldi.point")).attrs["chunk_width"] == 50


@pytest.mark.cluster
def test_xic_runs_on_the_scheduler_of_its_config_file(exported, tmp_path, capsys) -> None:
    from distributed import Client, LocalCluster

    loopback = {"host": "127.0.0.1", "protocol": "tcp", "dashboard_address": ":0"}
    with (
        LocalCluster(n_workers=1, processes=False, **loopback) as dask,
        Client(dask, set_as_default=False) as client,
    ):
        config = tmp_path / "cluster.toml"
        config.write_text(f'[cluster]\nscheduler = "{dask.scheduler_address}"\n')
        archive = str(exported.archives["ref.point"])
        assert run(["xic", archive, "--mz", "810.4155", "--json", "--config", str(config)]) == 0
        ran = client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.task_prefixes))
    assert "block_xic" in ran
    assert json.loads(capsys.readouterr().out)["run"] == "ref.point"
