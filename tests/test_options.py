"""Options: one precedence rule (command line > config file > defaults) and the shipped configs."""

from __future__ import annotations

import pytest

from mzpeak_dask import ClusterOptions, ConvertOptions, OptionsError
from mzpeak_dask.options import load_config, resolve

from .conftest import ROOT

CONFIGS = ROOT / "configs"


def test_default_toml_documents_the_real_defaults() -> None:
    config = load_config(CONFIGS / "default.toml")
    assert resolve(ConvertOptions, config, {}) == ConvertOptions()
    assert resolve(ClusterOptions, config, {}) == ClusterOptions()
    documented = set(config["convert"]) | {"numpress_intensity"}
    assert documented == set(ConvertOptions.defaults())


def test_precedence_command_line_over_file_over_defaults(tmp_path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[convert]\nlayout = "chunked"\nchunk_width = 20.0\n[cluster]\nworkers = 3\n')
    config = load_config(path)
    options = resolve(ConvertOptions, config, {"chunk_width": 10.0, "layout": None})
    assert options.layout == "chunked"  # file over default
    assert options.chunk_width == 10.0  # command line over file
    assert options.chunk_encoding == "delta"  # default
    assert resolve(ClusterOptions, config, {}).workers == 3


@pytest.mark.parametrize("name", ["local.toml", "slurm.toml"])
def test_shipped_configs_load(name: str) -> None:
    config = load_config(CONFIGS / name)
    cluster = resolve(ClusterOptions, config, {})
    assert cluster.cluster in ("local", "slurm")
    if name == "slurm.toml":
        assert cluster.slurm["cores"] == 8 and cluster.workers == 4


def test_invalid_options_are_rejected(tmp_path) -> None:
    with pytest.raises(OptionsError, match="layout must be one of"):
        ConvertOptions(layout="columnar")
    path = tmp_path / "bad.toml"
    path.write_text("[convert]\nrow_groups = 3\n")
    with pytest.raises(OptionsError, match="unknown convert option"):
        resolve(ConvertOptions, load_config(path), {})
    with pytest.raises(OptionsError, match="config file not found"):
        load_config(tmp_path / "absent.toml")
