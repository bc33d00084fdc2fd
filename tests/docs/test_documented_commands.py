"""Every ``mzpeak-dask`` command line the README and the documentation show parses with the
real parser: a documented flag that does not exist, or a value a flag refuses, fails here."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from mzpeak_dask import cli

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
            cli.build_parser().parse_args(_argv(command))
        except SystemExit as stopped:
            assert stopped.code == 0, f"{where}: {command}\n{errors.getvalue()}"


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
