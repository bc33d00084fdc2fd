"""The documentation site: its reference pages are generated from the real parser and the
option dataclasses, and it builds with ``mkdocs build --strict`` (a warning is an error)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from mzpeak_dask import cli
from mzpeak_dask.options import GROUPS

ROOT = Path(__file__).resolve().parents[2]


def _hook():
    spec = importlib.util.spec_from_file_location("reference", ROOT / "docs/hooks/reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _commands() -> dict[str, argparse.ArgumentParser]:
    return next(a for a in cli.build_parser()._actions if a.dest == "command").choices


def test_the_command_reference_lists_every_flag_of_the_parser() -> None:
    page = _hook().commands_markdown()
    for name, sub in _commands().items():
        section = page.split(f"## {name} {{ #{name} }}", 1)[1].split("\n## ", 1)[0]
        for action in sub._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue
            shown = action.option_strings[-1] if action.option_strings else action.metavar
            assert f"| `{shown}" in section or f", {shown}" in section, f"{name} {shown}"
        assert sub.epilog.strip() in section  # its examples


def test_the_config_reference_lists_every_key_with_its_default() -> None:
    page = _hook().config_markdown()
    assert "| `partition_bytes` | int | `25165824 (24 MiB)` |" in page
    assert '| `layout` | str | `"point"` | `--layout` (convert, batch) |' in page
    for cls in GROUPS:
        section = page.split(f"## [{cls.section}]", 1)[1].split("\n## ", 1)[0]
        for f in fields(cls):
            if (cls.section, f.name) != ("cluster", "slurm"):  # the [slurm] table
                assert f"| `{f.name}` |" in section, f"{cls.section}.{f.name}"


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path) -> None:
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    cli_page = (site / "reference" / "cli" / "index.html").read_text()
    assert "--partition-bytes" in cli_page and "mzpeak-dask cluster-script" in cli_page
    assert "convert_many" in (site / "reference" / "api" / "index.html").read_text()
    assert (site / "images" / "xic.png").stat().st_size > 0
