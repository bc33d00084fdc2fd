"""MkDocs hook: the generated parts of the reference pages, built from the code at each build.

A page holding ``<!-- generated: commands -->`` gets every command and flag of the real
argparse parser (:func:`mzpeak_dask.cli.build_parser`); one holding ``<!-- generated: config
-->`` gets every key of the option dataclasses of :mod:`mzpeak_dask.options` with its default,
its meaning taken from the comments of ``configs/default.toml`` (which a test keeps equal to
the dataclasses). Nothing here is written twice by hand.
"""

from __future__ import annotations

import argparse
import html
import re
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = "<!-- generated: commands -->"
CONFIG = "<!-- generated: config -->"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if COMMANDS in markdown:
        markdown = markdown.replace(COMMANDS, commands_markdown())
    if CONFIG in markdown:
        markdown = markdown.replace(CONFIG, config_markdown())
    return markdown


# a Sphinx role left in a docstring, as Markdown renders it: :func:<code>name</code>
_ROLE = re.compile(r":(?:func|meth|mod|class|exc|data|attr|obj):<code>(~?)\.*([^<]*)</code>")


def on_page_content(html_text: str, page: Any, config: Any, files: Any) -> str:
    """The docstrings' Sphinx roles as plain code (``~`` keeps the last name, as Sphinx does)."""
    return _ROLE.sub(
        lambda m: f"<code>{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}</code>",
        html_text,
    )


def _cell(text: str) -> str:
    """Text for a Markdown table cell: no HTML, no pipes, no line breaks."""
    return html.escape(" ".join(text.split()), quote=False).replace("|", "\\|")


def _plain(text: str) -> str:
    """A docstring's RST markup as Markdown: ``code`` as `code`, roles as their target."""
    text = re.sub(r":\w+:`~?\.*([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def _invocation(action: argparse.Action) -> str:
    if not action.option_strings:
        return action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    flag = ", ".join(action.option_strings)
    if action.nargs == 0:
        return flag
    if action.choices is not None:
        return f"{flag} {{{','.join(map(str, action.choices))}}}"
    metavar = action.metavar or action.dest.upper()
    return f"{flag} {' '.join(metavar) if isinstance(metavar, tuple) else metavar}"


def _argument_tables(sub: argparse.ArgumentParser) -> list[str]:
    out = []
    for group in sub._action_groups:
        rows = [
            f"| `{_invocation(a)}` | {_cell(a.help or '')} |"
            for a in group._group_actions
            if a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)
        ]
        if not rows:
            continue
        title = {"positional arguments": "arguments", "options": "options"}.get(
            group.title or "", group.title
        )
        out += [f"**{_cell(title or '')}**", "", "| argument | meaning |", "|---|---|", *rows, ""]
    return out


def commands_markdown() -> str:
    """Every command of ``mzpeak-dask``: its description, usage, arguments and examples."""
    from mzpeak_dask.cli import build_parser

    parser = build_parser()
    out = [
        "```text",
        parser.format_usage().strip(),
        "```",
        "",
        " ".join(parser.description.split()),
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    helps = {
        a.dest: a.help
        for a in next(
            a for a in parser._actions if isinstance(a, argparse._SubParsersAction)
        )._choices_actions
    }
    for name in _subcommands(parser):
        out.append(f"| [`{name}`](#{name}) | {_cell(helps.get(name) or '')} |")
    out.append("")
    for name, sub in _subcommands(parser).items():
        out += [f"## {name} {{ #{name} }}", "", " ".join((sub.description or "").split()), ""]
        out += ["```text", sub.format_usage().strip(), "```", ""]
        out += _argument_tables(sub)
        out += ["```text", (sub.epilog or "").strip(), "```", ""]
    return "\n".join(out)


def _comments() -> dict[tuple[str, str], str]:
    """The meaning of each key of ``configs/default.toml``: the comment beside it (and on the
    indented comment lines that follow)."""
    meanings: dict[tuple[str, str], str] = {}
    section, last = "", None
    key_line = re.compile(r"^#?\s*(\w+)\s*=\s*(.*?)(?:\s+#\s?(.*))?$")
    for line in (ROOT / "configs" / "default.toml").read_text().splitlines():
        if line.startswith("["):
            section, last = line.strip("[] "), None
        elif line[:1].isspace() and line.strip().startswith("#") and last:
            meanings[last] += " " + line.strip().lstrip("#").strip()
        elif (match := key_line.match(line)) and section:
            last = (section, match.group(1))
            meanings[last] = (match.group(3) or "").strip()
        else:
            last = None
    return meanings


def _toml(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def config_markdown() -> str:
    """Every key of every option group, with its type, default, flag and meaning."""
    from mzpeak_dask.cli import build_parser
    from mzpeak_dask.cli.args import GROUP_FLAGS, SIZE_OPTIONS, human_bytes
    from mzpeak_dask.options import GROUPS

    meanings = _comments()
    on_commands: dict[tuple[type, str], list[str]] = {}
    for name, sub in _subcommands(build_parser()).items():
        for cls, names in (sub.get_default("option_flags") or {}).items():
            for key in names:
                on_commands.setdefault((cls, key), []).append(name)
    out = []
    for cls in GROUPS:
        doc = _plain(" ".join((cls.__doc__ or "").split()))
        out += [f"## [{cls.section}] {{ #{cls.section} }}", "", f"`{cls.__name__}`: {doc}", ""]
        out += ["| key | type | default | flag | meaning |", "|---|---|---|---|---|"]
        for f in fields(cls):
            if f.name == "slurm" and cls.section == "cluster":
                continue  # the [slurm] table
            default = f.default if f.default is not MISSING else f.default_factory()
            shown = _toml(default)
            if f.name in SIZE_OPTIONS:
                shown += f" ({human_bytes(default)})"
            commands = on_commands.get((cls, f.name), [])
            flag = ""
            if commands:
                switch = "--" + f.name.replace("_", "-")
                if default is True:
                    switch = switch.replace("--", "--no-", 1)
                flag = f"`{switch}` ({', '.join(commands)})"
            meaning = meanings.get((cls.section, f.name)) or GROUP_FLAGS.get(cls, {}).get(
                f.name, ""
            )
            out.append(
                f"| `{f.name}` | {_cell(str(f.type))} | `{shown}` | {flag} "
                f"| {_cell(meaning)} |"
            )
        out.append("")
    return "\n".join(out)
