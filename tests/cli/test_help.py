"""The command line explains itself: a version, a plain description with examples, help for
every argument, sizes in human units, and only the flags that act on each command."""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mzpeak_dask import __version__, cli
from mzpeak_dask.cli.args import options
from mzpeak_dask.options import ConvertOptions

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
TMT = DATA / "depthcharge" / "TMT10-Trial-8.mzML"


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    return next(a for a in parser._actions if a.dest == "command").choices


def _usage_error(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as stopped:
        cli.build_parser().parse_args(argv)
    assert stopped.value.code == 2
    return capsys.readouterr().err


def test_version(capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.build_parser().parse_args(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.strip() == f"mzpeak-dask {__version__}"


def test_top_level_help_is_plain_and_shows_examples() -> None:
    text = cli.build_parser().format_help()
    assert "``" not in text and ":func:" not in text
    assert "Convert mass-spectrometry runs" in text
    assert "examples:\n  mzpeak-dask convert run.mzML run.mzpeak" in text
    for name in _commands():
        assert name in text


def test_every_command_has_examples_that_parse() -> None:
    for name, sub in _commands().items():
        assert sub.epilog and sub.epilog.startswith("examples:"), name
        lines = [line.split("#")[0].strip() for line in sub.epilog.splitlines()]
        examples = [shlex.split(line)[1:] for line in lines if line.startswith("mzpeak-dask ")]
        assert examples, name
        for argv in examples:
            assert argv[0] == name
            cli.build_parser().parse_args(argv)  # exits 2 on a flag that does not exist


def test_every_argument_has_help() -> None:
    for name, sub in _commands().items():
        for action in sub._actions:
            if action.help == argparse.SUPPRESS:
                continue
            assert action.help, f"{name} {action.option_strings or action.metavar}"


def test_sizes_in_human_units(capsys) -> None:
    for name in ("convert", "batch"):
        text = _commands()[name].format_help()
        assert "(default: 24 MiB)" in text and "(default: 1 MiB)" in text
        assert "25165824" not in text and "1048576" not in text
    parse = cli.build_parser().parse_args
    for given, count in (("12MiB", 12 << 20), ("12 MiB", 12 << 20), ("500kB", 500_000)):
        args = parse(["convert", "a.mzML", "a.mzpeak", "--partition-bytes", given])
        assert options(args, ConvertOptions).partition_bytes == count
    args = parse(["convert", "a.mzML", "a.mzpeak", "--data-page-size", "65536"])
    assert options(args, ConvertOptions).data_page_size == 65536
    assert "not a size: '12 parsecs'" in _usage_error(
        ["convert", "a.mzML", "a.mzpeak", "--partition-bytes", "12 parsecs"], capsys
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["batch", "src", "out", "--overwrite"],  # a batch always replaces its own outputs
        ["cluster-script", "--window", "4"],  # nothing paces a script
        ["cluster-script", "--dashboard"],
        ["cluster-script", "--cluster", "inline"],
        ["cluster-script", "--workers", "4"],  # the script is one job's, from [slurm]
        ["cluster-script", "-q"],
        ["export-zarr", "a.mzpeak", "s.zarr", "--window", "4"],  # paces conversions only
        ["xic", "a.mzpeak", "--mz", "500", "--window", "4"],
        ["info", "a.mzpeak", "-q"],  # nothing to quiet
        ["validate", "a.mzpeak", "--quiet"],
        ["convert", "a.mzML", "a.mzpeak", "--parser", "xerces"],
    ],
)
def test_flags_that_would_change_nothing_are_refused(argv, capsys) -> None:
    error = _usage_error(argv, capsys)
    assert "unrecognized arguments" in error or "invalid choice" in error


def test_parser_flag_reaches_the_conversion_options() -> None:
    parse = cli.build_parser().parse_args
    args = parse(["convert", "a.mzML", "a.mzpeak", "--parser", "pyteomics"])
    assert options(args, ConvertOptions).parser == "pyteomics"
    args = parse(["batch", "src", "out", "--parser", "pyteomics"])
    assert options(args, ConvertOptions).parser == "pyteomics"
    assert options(parse(["convert", "a.mzML", "a.mzpeak"]), ConvertOptions).parser == "lean"


@pytest.mark.slow
def test_parser_pyteomics_converts_a_real_run_to_the_same_archive(tmp_path) -> None:
    outputs = []
    for parser in ("pyteomics", "lean"):
        output = tmp_path / f"{parser}.mzpeak"
        command = [sys.executable, "-m", "mzpeak_dask", "convert", str(TMT), str(output)]
        result = subprocess.run(
            [*command, "--parser", parser, "--cluster", "inline"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        assert "11 spectra" in result.stdout
        outputs.append(output.read_bytes())
    assert outputs[0] == outputs[1]
