"""Every ``mzpeak-dask`` command line the README and the documentation show parses with the
real parser: a documented flag that does not exist, a value a flag refuses, or a flag that
cannot act with the others, fails here. And every one that can run on this machine (all but
those that need a bucket, a web server, a remote scheduler or SLURM) runs, on real files."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from mzpeak_dask import cli
from mzpeak_dask.cli.checks import refuse_conflicts

from ..helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^\s*(```|~~~)")
PROGRAM = re.compile(r"^(?:\$\s+)?(?:\S*/)?mzpeak-dask(?:\s|$)")


def documented_commands(page: Path) -> list[tuple[int, str]]:
    """The command lines of ``page``'s fenced code blocks that run ``mzpeak-dask``, with the
    line each starts on; a line ending in a backslash continues on the next."""
    found, inside, pending, start = [], False, "", 0
    for number, line in enumerate(page.read_text().splitlines(), 1):
        if FENCE.match(line):
            inside, pending = not inside, ""
            continue
        if not inside:
            continue
        if not pending:
            start = number
        pending += line.strip() if pending else line.rstrip()
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip() + " "
            continue
        command, pending = pending.strip(), ""
        if PROGRAM.match(command):
            found.append((start, command))
    return found


def _all() -> list[tuple[str, str]]:
    return [
        (f"{page.relative_to(ROOT)}:{number}", command)
        for page in PAGES
        for number, command in documented_commands(page)
    ]


def _argv(command: str) -> list[str]:
    words = shlex.split(command, comments=True)
    return words[words.index(next(w for w in words if w.endswith("mzpeak-dask"))) + 1 :]


@pytest.mark.parametrize(("where", "command"), _all(), ids=[w for w, _ in _all()])
def test_documented_command_parses(where: str, command: str) -> None:
    errors = io.StringIO()
    with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
        try:
            args = cli.build_parser().parse_args(_argv(command))
        except SystemExit as stopped:
            assert stopped.code == 0, f"{where}: {command}\n{errors.getvalue()}"
            return
    if args.config and not (ROOT / args.config).exists():
        return  # a config file of the reader's own (run below with one)
    if args.config:
        args.config = str(ROOT / args.config)
    refuse_conflicts(args)  # no flag that cannot act with the others


def test_the_readme_shows_every_command_and_is_short() -> None:
    readme = ROOT / "README.md"
    assert len(readme.read_text().splitlines()) <= 200
    shown = {_argv(command)[0] for _, command in documented_commands(readme)}
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert set(commands) <= shown


def test_continued_lines_and_comments_are_one_command(tmp_path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text mzpeak-dask convert --nonsense\n"
        "```bash\n"
        "mzpeak-dask convert a.mzML \\\n"
        "    b.mzpeak --layout chunked   # a comment\n"
        "echo mzpeak-dask\n"
        "```\n"
    )
    assert documented_commands(page) == [
        (3, "mzpeak-dask convert a.mzML b.mzpeak --layout chunked   # a comment")
    ]
    assert _argv(documented_commands(page)[0][1]) == [
        "convert",
        "a.mzML",
        "b.mzpeak",
        "--layout",
        "chunked",
    ]


# --- the documented commands run, on real files, where they can run here ---------------------

DATA = ROOT.parent / "shared" / "data"
TMT = DATA / "depthcharge" / "TMT10-Trial-8"
INPUTS = {  # the names the pages use, and the real files that stand for them
    "run.mzML": DATA / "mzdata" / "small.mzML",
    "run.mzML.gz": DATA / "mzdata" / "small.mzML.gz",
    "a.mzML": TMT.with_suffix(".mzML"),
    "b.mzXML": TMT.with_suffix(".mzXML"),
    "c.mgf": TMT.with_suffix(".mgf"),
    "data/repository/tmt/TMT10-Trial-8.mzML": TMT.with_suffix(".mzML"),
    "data/repository/small.mgf": DATA / "mzdata" / "small.mgf",
    "run.raw": DATA / "vendor" / "thermo" / "Angiotensin_325-CID.raw",
    "run.d": DATA / "vendor" / "bruker" / "dda_test.d",
}
ARCHIVES = {  # what the read commands read: a spans 29.0 to 29.7 min, the pages' --rt 29 30
    "a.mzpeak": DATA / "openms" / "MS3_nonHierarchical.mzML",
    "b.mzpeak": TMT.with_suffix(".mzML"),
    "c.mzpeak": DATA / "mzdata" / "small.mzML",
    "run.mzpeak": DATA / "mzdata" / "small.mzML",
    "ffm.chunked.mzpeak": DATA / "openms" / "FeatureFinderMetaboIdent_1_input.mzML",
}
# targets.csv: the analysis page's own example of a MINT target list
TARGETS = next(
    block.split("```")[0]
    for block in (ROOT / "docs" / "guide" / "analysis.md").read_text().split("```text\n")[1:]
    if block.startswith("peak_label,")
)
# my.toml: the configuration page's own example
CONFIG = (
    (ROOT / "docs" / "reference" / "config.md").read_text().split("```toml\n")[1].split("```")[0]
)


def _cannot_run_here(argv: list[str]) -> str | None:
    """Why a documented command cannot run on this machine (None: it can)."""
    if any("://" in word for word in argv):
        return "a URL: a bucket, a web server or a scheduler elsewhere"
    if "configs/slurm.toml" in argv and argv[0] != "cluster-script":
        return "SLURM"
    if "urls.txt" in argv:
        return "a manifest of URLs"
    return None


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> Path:
    """The archives the read commands name (and runs.zarr of a and b), converted once."""
    from mzpeak_dask import convert
    from mzpeak_dask.export.zarr import to_zarr
    from mzpeak_dask.options import ClusterOptions, ConvertOptions

    folder = tmp_path_factory.mktemp("archives")
    inline = ClusterOptions(cluster="inline")
    for name, source in ARCHIVES.items():
        layout = "chunked" if ".chunked." in name else "point"
        convert(source, folder / name, ConvertOptions(layout=layout), cluster=inline)
    to_zarr([folder / "a.mzpeak", folder / "b.mzpeak"], folder / "runs.zarr", cluster=inline)
    return folder


def _workspace(folder: Path, archives: Path, argv: list[str]) -> None:
    """The inputs (linked), configs/, my.toml, a one-column CSV manifest and, for a command
    that reads archives, the archives; never the outputs a command writes."""
    for name, source in INPUTS.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).symlink_to(source)
    (folder / "configs").symlink_to(ROOT / "configs")
    (folder / "my.toml").write_text(CONFIG)
    (folder / "manifest.csv").write_text("path\nrun.mzML\nc.mgf\n")
    (folder / "targets.csv").write_text(TARGETS)
    if argv[0] in ("info", "validate", "xic", "tic", "export-zarr", "quantify", "ion-map"):
        for name in [*ARCHIVES, "runs.zarr"]:
            if argv[0] != "export-zarr" or name != "runs.zarr":
                (folder / name).symlink_to(archives / name)
        (folder / "converted").mkdir()  # a batch's output folder
        for name in ("a.mzpeak", "b.mzpeak"):
            (folder / "converted" / name).symlink_to(archives / name)


def _local(argv: list[str], folder: Path) -> list[str]:
    """``argv`` with the pages' absolute folders (/data/..., /scratch/...) under ``folder``."""
    return [
        str(folder / w.lstrip("/")) if w.startswith(("/data/", "/scratch/")) else w for w in argv
    ]


def _runnable() -> list[tuple[str, str]]:
    return [(w, c) for w, c in _all() if _cannot_run_here(_argv(c)) is None]


def test_the_commands_that_cannot_run_here_are_few_and_need_what_is_not_here() -> None:
    """Every documented command runs below on real files, but those that need a bucket, a
    web server, a remote scheduler or SLURM (parsed, above, like every other)."""
    elsewhere = [(w, c) for w, c in _all() if _cannot_run_here(_argv(c))]
    assert len(_runnable()) >= 30 and len(elsewhere) <= 20, elsewhere


@pytest.mark.slow
@pytest.mark.cluster  # one of them starts the LocalCluster of --workers 4
@pytest.mark.parametrize(("where", "command"), _runnable(), ids=[w for w, _ in _runnable()])
def test_documented_command_runs_on_real_files(where, command, archives, tmp_path, monkeypatch):
    argv = _argv(command)
    _workspace(tmp_path, archives, argv)
    monkeypatch.chdir(tmp_path)
    argv = _local(argv, tmp_path)
    words = [*argv, "-q"] if _quiet(argv) else argv
    if any(word.endswith(".raw") for word in argv):  # Mono: loaded in a process of its own
        done = run_cli(*words, cwd=tmp_path)
        status, printed, said = done.returncode, done.stdout, done.stderr
    else:
        errors = io.StringIO()
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()) as out:
            status = cli.main(words)
        printed, said = out.getvalue(), errors.getvalue()
    assert status == 0, f"{where}: {command}\n{said}"
    assert "error" not in said, said
    _check_outputs(argv, tmp_path, printed)


def _quiet(argv: list[str]) -> bool:
    return argv[0] in ("convert", "batch", "export-zarr")


def _check_outputs(argv: list[str], folder: Path, printed: str) -> None:
    """What the command made is there: archives that validate, a plot, a report."""
    from mzpeak_dask.read.validate import ERROR, validate

    args = cli.build_parser().parse_args(argv)
    made: list[Path] = []
    if argv[0] == "convert":
        output = folder / args.output
        several = len(args.inputs) > 1 or args.output.endswith("/")
        made = sorted(output.glob("*.mzpeak")) if several else [output]
        assert len(made) == len(args.inputs)
    elif argv[0] == "batch":
        output = folder / args.output_dir
        assert (output / "batch_report.json").is_file()
        made = sorted(output.rglob("*.mzpeak"))
        assert made
    for archive in made:
        assert not [p for p in validate(archive) if p.severity == ERROR], archive
    if getattr(args, "plot", None):
        assert (folder / args.plot).stat().st_size > 0
    if getattr(args, "output", None) and argv[0] in ("xic", "tic", "quantify"):
        assert (folder / args.output).stat().st_size > 0
    elif argv[0] in ("info", "validate", "xic", "tic"):
        assert printed.strip()
