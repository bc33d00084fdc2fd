"""Options: one precedence rule (command line > config file > defaults) and the shipped configs."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mzpeak_dask import ClusterOptions, ConvertOptions, OptionsError
from mzpeak_dask.options import CLUSTERS, GROUPS, SlurmOptions, load_config, resolve
from mzpeak_dask.parallel.cluster import KINDS

from .conftest import ROOT

CONFIGS = ROOT / "configs"


def test_default_toml_documents_the_real_defaults() -> None:
    config = load_config(CONFIGS / "default.toml")
    assert resolve(ConvertOptions, config, {}) == ConvertOptions()
    assert resolve(ClusterOptions, config, {}) == ClusterOptions()
    documented = set(config["convert"]) | {"numpress_intensity"}
    assert documented == set(ConvertOptions.defaults())


def documented(path) -> dict[str, dict[str, Any]]:
    """Per table of a config file: its keys and values, and its commented-out keys (an option
    whose default is none) as None."""
    tables = load_config(path)
    out = {name: dict(values) for name, values in tables.items()}
    section = None
    for line in path.read_text().splitlines():
        if found := re.match(r"^\[(\w+)\]", line):
            section = found.group(1)
        elif section and (found := re.match(r"^#\s*(\w+)\s*=", line)):
            out[section].setdefault(found.group(1), None)
    return out


def test_default_toml_lists_every_option_with_its_default() -> None:
    """configs/default.toml and the option dataclasses never drift apart: every group is a
    table holding exactly its fields, each with its default."""
    expected = {
        group.section: {k: v for k, v in group.defaults().items() if k != "slurm"}
        for group in GROUPS
    }
    assert documented(CONFIGS / "default.toml") == expected


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
    path.write_text("[slurm]\ncores = 8\nqueues = 'x'\n")
    with pytest.raises(OptionsError, match="unknown slurm option"):
        resolve(ClusterOptions, load_config(path), {})


def test_slurm_options_are_the_cluster_keywords() -> None:
    slurm = SlurmOptions(queue="normal", cores=8, job_extra_directives=["--exclusive"])
    assert dict(**slurm) == {
        "queue": "normal",
        "cores": 8,
        "processes": 8,  # one worker process per core unless given
        "memory": "4GB",
        "job_extra_directives": ["--exclusive"],
    }
    assert ClusterOptions(slurm={"cores": 2}).slurm == SlurmOptions(cores=2)


def test_every_cluster_option_has_a_kind() -> None:
    """`cluster` is "auto" (decided by the size of the work), "inline" (no Dask) or the name of
    a kind of cluster that can be started."""
    assert {*KINDS, "auto", "inline"} == set(CLUSTERS)
    assert all(kind.name == name for name, kind in KINDS.items())


def test_numpress_intensity_needs_the_chunked_layout() -> None:
    """The point layout stores intensities as they are: a Numpress intensity transform there
    would do nothing and be recorded as done, so it is refused, naming both parameters."""
    with pytest.raises(OptionsError, match=r"numpress_intensity='slof' needs layout='chunked'"):
        ConvertOptions(numpress_intensity="slof")
    with pytest.raises(OptionsError, match=r"numpress_intensity='pic' needs layout='chunked'"):
        resolve(ConvertOptions, {"convert": {"numpress_intensity": "pic"}}, {})
    assert ConvertOptions(layout="chunked", numpress_intensity="pic").lossy
