"""The command-line flags are generated from the option dataclasses: their names, choices and
switches follow the options, and a flag given wins over the config file, which wins over the
defaults."""

from __future__ import annotations

import pytest

from mzpeak_dask import cli
from mzpeak_dask.cli.args import GROUP_FLAGS, analysis_cluster, options
from mzpeak_dask.options import (
    ClusterOptions,
    ConvertOptions,
    ZarrOptions,
)


def _flags(command: str) -> dict[str, object]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return {s: a for a in sub.choices[command]._actions for s in a.option_strings}


def test_every_flag_names_an_option() -> None:
    for group, flags in GROUP_FLAGS.items():
        assert set(flags) <= set(group.defaults()), group.__name__


def test_flags_follow_the_options() -> None:
    flags = _flags("convert")
    assert flags["--layout"].choices == ["point", "chunked"]
    assert flags["--numpress-intensity"].choices == ["slof", "pic"]  # None is not a choice
    assert flags["--compression"].choices == list(ConvertOptions.choices["compression"])
    assert flags["--cluster"].choices == list(ClusterOptions.choices["cluster"])
    assert flags["--no-null-marking"].const is False  # a true default turns off
    assert flags["--peaks"].const is True  # a false default turns on
    assert flags["--partition-items"].type("12") == 12 and flags["--chunk-width"].type("2.5") == 2.5
    assert all(f.default is None for f in flags.values() if f.dest in ConvertOptions.defaults())
    zarr = _flags("export-zarr")
    assert zarr["--compression"].choices == list(ZarrOptions.choices["compression"])
    assert "--layout" not in zarr and "--chunk-width" in zarr
    assert {"--resume", "--retries", "--no-reports"} <= set(_flags("batch"))
    assert {"--ppm", "--ms-level", "--max-rows"} <= set(_flags("xic"))


def test_command_line_over_config_over_defaults(tmp_path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[zarr]\ncompression = "none"\n[convert]\nchunk_width = 20.0\n')
    parse = cli.build_parser().parse_args
    args = parse(["export-zarr", "a.mzpeak", "s.zarr", "--config", str(config)])
    assert options(args, ZarrOptions) == ZarrOptions(compression="none")
    assert options(args, ConvertOptions).chunk_width == 20.0
    args = parse(["export-zarr", "a.mzpeak", "s.zarr", "--config", str(config), "--overwrite"])
    assert options(args, ZarrOptions) == ZarrOptions(compression="none", overwrite=True)
    args = parse(["export-zarr", "a.mzpeak", "s.zarr", "--compression", "zstd", "--overwrite"])
    assert options(args, ZarrOptions) == ZarrOptions(overwrite=True)
    # export-zarr's --overwrite is the export's, not the conversion's
    assert options(args, ConvertOptions) == ConvertOptions()
    with pytest.raises(SystemExit):
        parse(["export-zarr", "a.mzpeak", "s.zarr", "--compression", "gzip"])


@pytest.mark.parametrize(
    "config, flags, cluster",
    [
        ("", [], "inline"),  # nothing asked for: Dask's threads here
        ("", ["--workers", "2"], "local"),
        ('[cluster]\ncluster = "slurm"\n', [], "slurm"),
        ("[cluster]\nworkers = 2\n", [], "local"),
        ('[cluster]\nscheduler = "tcp://head:8786"\n', [], "local"),  # with its scheduler
        ('[cluster]\ncluster = "slurm"\n', ["--cluster", "inline"], "inline"),
    ],
)
def test_xic_starts_the_cluster_its_config_file_asks_for(tmp_path, config, flags, cluster) -> None:
    """A cluster asked for in a --config file counts as one asked for by the flags."""
    path = tmp_path / "c.toml"
    path.write_text(config)
    args = cli.build_parser().parse_args(
        ["xic", "a.mzpeak", "--mz", "500", "--config", str(path), *flags]
    )
    assert analysis_cluster(args).cluster == cluster


def test_the_dashboard_is_off_unless_asked_for_and_either_switch_beats_the_config(
    tmp_path,
) -> None:
    """A cluster started here serves no dashboard unless ``--dashboard`` (or the config file)
    asks for one; ``--no-dashboard``, unlisted, overrides a config file that asks."""
    parse = cli.build_parser().parse_args
    assert ClusterOptions().dashboard is False
    assert options(parse(["convert", "a.mzML", "a.mzpeak"]), ClusterOptions).dashboard is False
    args = parse(["convert", "a.mzML", "a.mzpeak", "--dashboard"])
    assert options(args, ClusterOptions).dashboard is True
    config = tmp_path / "c.toml"
    config.write_text("[cluster]\ndashboard = true\n")
    args = parse(["convert", "a.mzML", "a.mzpeak", "--config", str(config)])
    assert options(args, ClusterOptions).dashboard is True
    args = parse(["convert", "a.mzML", "a.mzpeak", "--config", str(config), "--no-dashboard"])
    assert options(args, ClusterOptions).dashboard is False
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert "--dashboard" in sub.choices["convert"].format_help()
    assert "--no-dashboard" not in sub.choices["convert"].format_help()
