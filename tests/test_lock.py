"""The lock (requirements.lock) that `make setup` and CI install from: it pins every package
the package and its `dev` extra need, each at a version pyproject.toml's ranges allow, so a
new release reaches users only through `make lock`, which runs the tests first."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .conftest import ROOT


def locked() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = re.fullmatch(r"([A-Za-z0-9._-]+)==(\S+)", line.strip()).groups()
            pins[canonicalize_name(name)] = version
    return pins


def declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    own = canonicalize_name(project["name"])
    out = []
    for text in [*project["dependencies"], *project["optional-dependencies"]["dev"]]:
        requirement = Requirement(text)
        if canonicalize_name(requirement.name) != own:  # "mzpeak-dask[thermo]" in dev
            out.append(requirement)
    return out


def test_every_declared_dependency_is_pinned_within_its_range() -> None:
    pins = locked()
    missing = [r.name for r in declared() if canonicalize_name(r.name) not in pins]
    outside = [
        f"{r.name}=={pins[canonicalize_name(r.name)]} (wants {r.specifier})"
        for r in declared()
        if canonicalize_name(r.name) in pins
        and not r.specifier.contains(pins[canonicalize_name(r.name)], prereleases=True)
    ]
    assert missing == [] and outside == []


def test_the_lock_pins_each_package_once() -> None:
    lines = [
        line for line in (ROOT / "requirements.lock").read_text().splitlines() if "==" in line
    ]
    assert len(lines) == len(locked())
