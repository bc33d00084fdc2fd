"""Flags that cannot act with the others given, refused in one line before any work.

A flag given on the command line that the rest of the options would leave without effect (a
scheduler address with ``--cluster inline``, a chunk encoding for the point layout) is an
error naming both, never silently ignored. What a ``--config`` file sets is not refused: one
file serves many commands, and the command line overrides it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from ..errors import OptionsError
from ..options import COMPRESSION_LEVELS, ClusterOptions, ConvertOptions, load_config
from .args import given, options


@dataclass(frozen=True)
class Conflict:
    """Flags ``names`` of ``group`` cannot act when its option ``when`` is one of ``values``."""

    group: type
    names: tuple[str, ...]
    when: str
    values: tuple[Any, ...]
    why: str


CONFLICTS = (
    Conflict(
        ClusterOptions,
        ("scheduler", "workers", "threads_per_worker", "memory_limit", "window", "dashboard"),
        "cluster",
        ("inline",),
        "inline runs in this process, with no cluster",
    ),
    Conflict(
        ConvertOptions,
        ("chunk_encoding", "chunk_width"),
        "layout",
        ("point",),
        "only the chunked layout has chunks; add --layout chunked",
    ),
    Conflict(
        ConvertOptions,
        ("compression_level",),
        "compression",
        tuple(c for c in ConvertOptions.choices["compression"] if c not in COMPRESSION_LEVELS),
        "only zstd, gzip and brotli take a level",
    ),
)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _shown(args: argparse.Namespace, group: type, name: str, value: Any) -> str:
    """How the user set ``name`` to ``value``: a flag, a config file, or the default."""
    if name in given(args, group):
        return f"{_flag(name)} {value}"
    if name in _config_keys(args, group):
        return f'{name} = "{value}" of --config'
    return f"the default {_flag(name)} {value}"


def _config(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    return load_config(getattr(args, "config", None))


def _config_keys(args: argparse.Namespace, group: type) -> set[str]:
    return set(_config(args).get(group.section, {}))


def refuse_conflicts(args: argparse.Namespace) -> None:
    """Raise :class:`OptionsError` (one line, naming both) for the first flag on this command
    line that cannot act with the other options of the command."""
    flags = getattr(args, "option_flags", None) or {}
    _refuse_level(args, flags)
    for conflict in CONFLICTS:
        offered = flags.get(conflict.group, ())
        if conflict.when not in offered:  # the command has no such choice
            continue
        value = getattr(options(args, conflict.group), conflict.when)
        if value not in conflict.values:
            continue
        typed = given(args, conflict.group)
        defaults = conflict.group.defaults()
        for name in conflict.names:
            switch_back = isinstance(defaults[name], bool) and typed.get(name) == defaults[name]
            if name not in typed or switch_back:  # not given, or a switch that does nothing
                continue
            setting = _shown(args, conflict.group, conflict.when, value)
            raise OptionsError(f"{_flag(name)} cannot act with {setting} ({conflict.why})")


def _refuse_level(args: argparse.Namespace, flags: dict[type, tuple[str, ...]]) -> None:
    """A compression level given beyond the range of the codec it would apply to (checked
    before the options are built, whose own check names the config key)."""
    level = given(args, ConvertOptions).get("compression_level")
    if level is None or "compression" not in flags.get(ConvertOptions, ()):
        return
    sources = (given(args, ConvertOptions), _config(args).get(ConvertOptions.section, {}))
    codec = next((s["compression"] for s in sources if "compression" in s), None)
    codec = codec or ConvertOptions.compression
    low, high = COMPRESSION_LEVELS.get(codec, (level, level))  # no level: refused above
    if not low <= level <= high:
        setting = _shown(args, ConvertOptions, "compression", codec)
        raise OptionsError(
            f"--compression-level {level} cannot act with {setting} "
            f"({codec} takes levels {low} to {high})"
        )


__all__ = ["CONFLICTS", "Conflict", "refuse_conflicts"]
