"""The command line never misleads: each command's --cluster help says what that command does,
a flag that cannot act with the others is refused in one line naming both, number flags are
checked against their ranges, messages hold no private names, results speak human units and
right plurals, and an API error names the API's own parameter."""

from __future__ import annotations

import argparse
import re

import pytest

from mzpeak_dask import cli, convert
from mzpeak_dask.analysis import xic
from mzpeak_dask.analysis.chromatograms import outside
from mzpeak_dask.analysis.runs import as_runs
from mzpeak_dask.batch.sources import read_manifest
from mzpeak_dask.errors import OptionsError, OutputError
from mzpeak_dask.export.zarr import to_zarr
from mzpeak_dask.options import ClusterOptions, ConvertOptions

from ..conftest import DATA
from ..helpers.cli import one_line_error, run_cli

TMT = DATA / "depthcharge" / "TMT10-Trial-8"
SMALL = DATA / "mzdata" / "small.mzML"
REFERENCE = DATA / "HUPO-PSI_mzPeak" / "small.mzpeak"
PRIVATE = re.compile(r"(?<![\w-])_[A-Za-z]\w*")  # a private Python name: _positive, _json


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    return next(a for a in parser._actions if a.dest == "command").choices


def _flag(command: str, flag: str) -> argparse.Action:
    return next(a for a in _commands()[command]._actions if flag in a.option_strings)


def _refused(argv: list[str], capsys) -> str:
    """The one line ``argv`` is refused with (exit status 2, before any work)."""
    assert cli.main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def _usage_error(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as stopped:
        cli.build_parser().parse_args(argv)
    assert stopped.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


# --cluster says what each command does with it


def test_each_commands_cluster_help_says_what_it_does() -> None:
    xic_help = _flag("xic", "--cluster").help
    assert "inline: in this process, on Dask's threads" in xic_help
    assert "without Dask" not in xic_help
    export_help = _flag("export-zarr", "--cluster").help
    assert "auto: in this process, one task at a time" in export_help
    assert "input size" not in export_help
    for command in ("convert", "batch"):
        text = _flag(command, "--cluster").help
        assert "inline: in this process, without Dask" in text
        assert "from the input size" in text


# flags that cannot act with the others


INLINE_IGNORES = [
    ("--scheduler", "tcp://127.0.0.1:8786"),
    ("--workers", "2"),
    ("--threads-per-worker", "2"),
    ("--memory-limit", "4GB"),
    ("--window", "4"),
    ("--dashboard", None),
]
COMMANDS = {
    "convert": ["convert", "a.mzML", "a.mzpeak"],
    "batch": ["batch", "repository", "out"],
    "xic": ["xic", "runs.zarr", "--mz", "445.12"],
    "export-zarr": ["export-zarr", "a.mzpeak", "runs.zarr"],
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("flag", "value"), INLINE_IGNORES)
def test_cluster_flags_are_refused_with_inline(command, flag, value, capsys) -> None:
    if flag == "--window" and command in ("xic", "export-zarr"):
        return  # not a flag of those commands
    given = [flag] if value is None else [flag, value]
    line = _refused([*COMMANDS[command], "--cluster", "inline", *given], capsys)
    assert line.startswith(f"error: {flag} cannot act with --cluster inline (")


def test_the_inline_cluster_of_a_config_file_is_named_as_such(tmp_path, capsys) -> None:
    config = tmp_path / "inline.toml"
    config.write_text('[cluster]\ncluster = "inline"\nscheduler = "tcp://head:8786"\n')
    line = _refused(
        ["convert", "a.mzML", "a.mzpeak", "--config", str(config), "--window", "3"], capsys
    )
    assert line == (
        'error: --window cannot act with cluster = "inline" of --config '
        "(inline runs in this process, with no cluster)"
    )


def test_what_a_config_file_sets_and_the_command_line_overrides_is_not_refused(tmp_path) -> None:
    """One config file serves many commands: its scheduler, overridden by --cluster inline,
    is the precedence rule at work, not a flag that cannot act."""
    config = tmp_path / "shared.toml"
    config.write_text('[cluster]\nscheduler = "tcp://head:8786"\nworkers = 4\n')
    args = cli.build_parser().parse_args(
        ["convert", "a.mzML", "a.mzpeak", "--config", str(config), "--cluster", "inline"]
    )
    from mzpeak_dask.cli.checks import refuse_conflicts

    refuse_conflicts(args)  # nothing to refuse
    for argv in (  # switches back to a default, and flags that act, are accepted
        ["convert", "a.mzML", "a.mzpeak", "--cluster", "inline", "--no-dashboard"],
        ["convert", "a.mzML", "a.mzpeak", "--layout", "chunked", "--chunk-encoding", "basic"],
        ["convert", "a.mzML", "a.mzpeak", "--compression", "gzip", "--compression-level", "9"],
        ["xic", "r.zarr", "--mz", "500", "--cluster", "local", "--threads-per-worker", "2"],
    ):
        refuse_conflicts(cli.build_parser().parse_args(argv))


@pytest.mark.parametrize("command", ["convert", "batch"])
def test_chunk_flags_are_refused_without_the_chunked_layout(command, capsys) -> None:
    line = _refused([*COMMANDS[command], "--chunk-encoding", "basic"], capsys)
    assert line == (
        "error: --chunk-encoding cannot act with the default --layout point (only the "
        "chunked layout has chunks; add --layout chunked)"
    )
    line = _refused([*COMMANDS[command], "--layout", "point", "--chunk-width", "20"], capsys)
    assert line.startswith("error: --chunk-width cannot act with --layout point (")


def test_a_compression_level_is_refused_where_it_cannot_act(capsys) -> None:
    line = _refused(
        ["convert", "a", "b", "--compression", "snappy", "--compression-level", "5"], capsys
    )
    assert line == (
        "error: --compression-level cannot act with --compression snappy (only zstd, gzip and "
        "brotli take a level)"
    )
    line = _refused(
        ["convert", "a", "b", "--compression", "gzip", "--compression-level", "12"], capsys
    )
    assert line == (
        "error: --compression-level 12 cannot act with --compression gzip "
        "(gzip takes levels 1 to 9)"
    )


# bounded values


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--compression-level", "99"],
            "argument --compression-level: must be from 1 to 22 (got 99)",
        ),
        (
            ["--compression-level", "0"],
            "argument --compression-level: must be from 1 to 22 (got 0)",
        ),
        (
            ["--threads-per-worker", "0"],
            "argument --threads-per-worker: must be at least 1 (got 0)",
        ),
        (["--workers", "0"], "argument --workers: must be at least 1 (got 0)"),
        (["--window", "0"], "argument --window: must be at least 1 (got 0)"),
        (["--start-timeout", "0"], "argument --start-timeout: must be above 0 (got 0)"),
        (["--task-timeout", "inf"], "argument --task-timeout: not a finite number: 'inf'"),
        (["--chunk-width", "-5"], "argument --chunk-width: must be above 0 (got -5)"),
        (["--partition-bytes", "0"], "argument --partition-bytes: must be at least 1 (got 0)"),
        (["--row-group-points", "1.5"], "argument --row-group-points: not a whole number: '1.5'"),
    ],
)
def test_bounded_values_are_checked(argv, message, capsys) -> None:
    assert _usage_error(["convert", "a.mzML", "a.mzpeak", *argv], capsys).endswith(message)


def test_bounded_values_of_the_other_commands_and_of_a_config_file(tmp_path, capsys) -> None:
    assert _usage_error(["xic", "r", "--mz", "500", "--ppm", "0"], capsys).endswith(
        "argument --ppm: must be above 0 (got 0)"
    )
    assert _usage_error(["batch", "r", "o", "--retries", "-1"], capsys).endswith(
        "argument --retries: must be at least 0 (got -1)"
    )
    assert _usage_error(["export-zarr", "a", "s", "--zarr-chunk-points", "0"], capsys).endswith(
        "argument --zarr-chunk-points: must be at least 1 (got 0)"
    )
    config = tmp_path / "c.toml"
    config.write_text("[convert]\ncompression_level = 99\n")
    line = _refused(["convert", "a.mzML", "a.mzpeak", "--config", str(config)], capsys)
    assert line == "error: compression_level must be from 1 to 22 (got 99)"
    with pytest.raises(OptionsError, match="compression_level 12: gzip takes levels 1 to 9"):
        ConvertOptions(compression="gzip", compression_level=12)
    with pytest.raises(OptionsError, match="threads_per_worker must be at least 1"):
        ClusterOptions(threads_per_worker=0)


# no private names


def test_no_message_names_a_private_function(capsys) -> None:
    """Every flag that takes a value, given one it refuses, says so without a private name
    (argparse shows a type function's name: ``invalid _positive value``)."""
    checked = 0
    for name, sub in _commands().items():
        required = {"xic": ["--mz", "500"]}.get(name, [])
        positionals = [a for a in sub._actions if not a.option_strings and a.dest != "help"]
        base = [name, *["x"] * sum(1 if a.nargs is None else 2 for a in positionals), *required]
        for action in sub._actions:
            if action.type in (None, str) or not action.option_strings:
                continue
            for bad in ("abc", "-1", "{"):
                argv = [*base, action.option_strings[0], bad]
                with pytest.raises(SystemExit):
                    cli.build_parser().parse_args(argv)
                err = capsys.readouterr().err
                assert not PRIVATE.search(err.splitlines()[-1]), (argv, err)
                checked += 1
    assert checked > 60
    line = _usage_error(["xic", "r", "--mz", "abc"], capsys)
    assert line.endswith("argument --mz: not a number: 'abc'")


# several inputs, manifests, RT windows, sizes and plurals


@pytest.mark.slow
def test_several_inputs_make_their_output_folder(tmp_path) -> None:
    """The README's ``convert a.mzML b.mzXML c.mgf out/``: out/ is made."""
    inputs = [str(TMT.with_suffix(s)) for s in (".mzML", ".mzXML", ".mgf")]
    out = tmp_path / "new" / "out"
    done = run_cli("convert", *inputs, f"{out}/", "--cluster", "inline", "-q")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "TMT10-Trial-8.mgf.mzpeak",
        "TMT10-Trial-8.mzML.mzpeak",
        "TMT10-Trial-8.mzXML.mzpeak",
    ]
    # inputs that all fail leave no folder behind
    gone = tmp_path / "gone"
    failed = run_cli("convert", str(tmp_path / "a.mzML"), str(tmp_path / "b.mzML"), str(gone))
    assert failed.returncode == 1 and not gone.exists()


def test_a_one_column_csv_manifest_reads_its_header_as_a_header(tmp_path) -> None:
    manifest = tmp_path / "runs.csv"
    manifest.write_text("path\nsmall.mzML\n")
    assert read_manifest(manifest) == [(tmp_path / "small.mzML").resolve()]
    manifest.write_text('"path"\nsmall.mzML\n')
    assert read_manifest(manifest) == [(tmp_path / "small.mzML").resolve()]
    manifest.write_text("small.mzML\nother.mzML\n")  # no header: a path a line
    assert len(read_manifest(manifest)) == 2


@pytest.mark.slow
def test_a_batch_of_a_one_column_csv_manifest_converts_its_paths(tmp_path) -> None:
    (tmp_path / "TMT.mzML").write_bytes(TMT.with_suffix(".mzML").read_bytes())
    manifest = tmp_path / "runs.csv"
    manifest.write_text("path\nTMT.mzML\n")
    done = run_cli("batch", str(manifest), str(tmp_path / "out"), "--cluster", "inline", "-q")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "TMT.mzpeak").is_file()


def test_an_rt_window_outside_every_run_says_so(capsys) -> None:
    argv = ["xic", str(REFERENCE), str(REFERENCE), "--mz", "445.12", "--rt", "500", "600"]
    line = _refused(argv, capsys)
    assert line == (
        "error: no MS1 spectra between 500 and 600 min in any of the runs (their spectra span "
        "0.004935 to 0.4872 min)"
    )
    assert capsys.readouterr().out == ""
    runs = as_runs([REFERENCE])  # the API's answer: the window, an empty frame, and why
    assert outside(runs, (500, 600), None) == (
        "no spectra between 500 and 600 min in the run (its spectra span 0.004935 to 0.4872 min)"
    )
    assert len(xic(runs, [445.12], rt=(500, 600))["small"]) == 0
    assert outside(runs, (0.1, 0.2), 1) is None  # a window inside the run


@pytest.mark.slow
def test_results_speak_human_units_and_right_plurals(tmp_path) -> None:
    out = tmp_path / "small.mzpeak"
    done = run_cli("convert", str(SMALL), str(out), "--cluster", "inline")
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert re.fullmatch(
        rf"{re.escape(str(SMALL))} -> {re.escape(str(out))}: 48 spectra, 243,054 points, "
        r"1 chromatogram, \d\.\d MiB \(0\.\d\dx input\) in \d+\.\d s",
        line,
    ), line
    info = run_cli("info", str(REFERENCE))
    assert "1 row group\n" in info.stdout and "row groups" not in info.stdout
    members = info.stdout.split("members\n")[1].splitlines()
    assert members and all(re.search(r" (\d+ bytes|\d+\.\d [KMG]iB)$", m) for m in members)
    assert "spectra_data.parquet" in members[0] and members[0].endswith("2.0 MiB")


# the API's errors name the API's parameters


def test_api_errors_name_the_apis_own_parameter(tmp_path) -> None:
    out = tmp_path / "small.mzpeak"
    out.write_bytes(b"")
    with pytest.raises(OutputError) as refused:
        convert(SMALL, out, ConvertOptions(), cluster=ClusterOptions(cluster="inline"))
    assert str(refused.value) == f"{out}: already exists (pass overwrite=True to replace it)"
    store = tmp_path / "runs.zarr"
    inline = ClusterOptions(cluster="inline")
    to_zarr([REFERENCE], store, cluster=inline)
    with pytest.raises(OutputError, match=r"already exists \(pass overwrite=True to replace it\)"):
        to_zarr([REFERENCE], store, cluster=inline)
    done = run_cli("export-zarr", str(REFERENCE), str(store))  # the command names its flag
    one_line_error(done, str(store / "small"), "already exists (use --overwrite to replace it)")


@pytest.mark.server
def test_a_one_column_csv_manifest_of_urls_reads_its_header_as_a_header(tmp_path) -> None:
    """A batch of URLs reads its manifest the same way (before, 'path' was taken for a URL)."""
    from mzpeak_dask.batch.remote import list_inputs

    from ..helpers.servers import range_server

    served = tmp_path / "served"
    served.mkdir()
    (served / "small.mzML").write_bytes(SMALL.read_bytes())
    with range_server(served) as server:
        manifest = tmp_path / "urls.csv"
        manifest.write_text(f"path\n{server.url}/small.mzML\n")
        found = list_inputs(str(manifest))
    assert [(url, size) for url, _, _, size in found] == [
        (f"{server.url}/small.mzML", SMALL.stat().st_size)
    ]
