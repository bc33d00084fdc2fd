"""The package's modules depend on each other one way: no import cycle between any two of them
(top-level, function-level and type-checking imports alike) nor between its subpackages, and
each module imports on its own in a fresh interpreter."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from .conftest import ROOT
from .helpers.real_runs import SMALL_MZML as SMALL

PACKAGE = "mzpeak_dask"


def package_modules() -> dict[str, Path]:
    """``mzpeak_dask.x.y`` -> its file (a package is its ``__init__.py``)."""
    out = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name ``from BASE import ...`` refers to (relative imports resolved)."""
    if node.level == 0:
        return node.module or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, node.module] if node.module else parts)


def imported_modules(module: str, path: Path, known: set[str]) -> set[str]:
    """The package modules ``module`` imports anywhere in its file. ``from X import Y`` is an
    edge to ``X.Y`` when that is a module, else to ``X`` (a package: its ``__init__``)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, path.name == "__init__.py", node)
            for alias in node.names:
                name = f"{base}.{alias.name}"
                out.add(name if name in known else base)
    return {name for name in out if name in known and name != module}


def import_graph() -> dict[str, set[str]]:
    modules = package_modules()
    known = set(modules)
    return {name: imported_modules(name, path, known) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or None (depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (found := visit(target)):
                return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph()
    assert "mzpeak_dask.options" in graph["mzpeak_dask.convert"]  # from .options import ...
    records, partition = "mzpeak_dask.model.records", "mzpeak_dask.encode.partition"
    assert "mzpeak_dask.format.vocabulary" in graph[records]  # from ..format import vocabulary
    assert "mzpeak_dask.readers" in graph[partition]  # a package: its __init__
    assert "mzpeak_dask.export.zarr" in graph["mzpeak_dask"]  # inside a function
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_between_modules() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between the package's top-level modules and subpackages (``mzpeak_dask.x``):
    a module of ``export/`` importing one of ``analysis/`` is an edge export -> analysis."""

    def top(name: str) -> str:
        return ".".join(name.split(".")[:2])

    out: dict[str, set[str]] = {}
    for module, targets in graph.items():
        out.setdefault(top(module), set()).update(top(t) for t in targets if top(t) != top(module))
    return out


def test_no_import_cycle_between_subpackages() -> None:
    """Beyond modules: export/ and analysis/ both use zarr_runs/ and read/, never each other."""
    cycle = find_cycle(package_graph(import_graph()))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def readme_tree() -> list[str]:
    """The modules and packages the internals page's "How it is built" lists, in its order."""
    text = (ROOT / "docs" / "internals.md").read_text()
    section = text[text.index("## How it is built") :].split("\n## ", 1)[0]
    names = re.findall(r"^    (\w+)(?:\.py|/) ", section, re.M)
    return [f"{PACKAGE}.{name}" for name in names]


def test_the_documentation_lists_the_tree_in_the_order_it_imports() -> None:
    """The internals page's layout section names every top-level module and package, each
    after every one it imports: the data flow reads from the tree."""
    listed = readme_tree()
    graph = package_graph(import_graph())
    entry_points = {PACKAGE, f"{PACKAGE}.__main__", f"{PACKAGE}._version"}
    assert sorted(listed) == sorted(set(graph) - entry_points)
    position = {name: k for k, name in enumerate(listed)}
    upward = [
        (name, target)
        for name in listed
        for target in graph[name]
        if target in position and position[target] > position[name]
    ]
    assert upward == []


def _import_alone(module: str) -> tuple[str, str]:
    result = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    return module, result.stderr.strip().splitlines()[-1] if result.returncode else ""


@pytest.mark.slow
def test_every_module_imports_on_its_own() -> None:
    with ThreadPoolExecutor(2) as pool:
        failures = [(m, e) for m, e in pool.map(_import_alone, sorted(package_modules())) if e]
    assert failures == []


def test_every_benchmark_imports() -> None:
    """The benchmark scripts (tests/benchmarks/) import each other's pieces: one that lost a
    piece it imports would only fail when someone runs it."""
    modules = [
        f"tests.benchmarks.{p.stem}" for p in sorted((ROOT / "tests" / "benchmarks").glob("*.py"))
    ]
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)"
    result = subprocess.run(
        [sys.executable, "-c", code, *modules],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr.strip().splitlines()[-1:]


def test_the_package_loads_neither_dask_nor_zarr() -> None:
    """``import mzpeak_dask`` (the command line too) pays for Dask and zarr only when used,
    and for h5py only when an mzMLb input is read."""
    code = (
        "import sys, mzpeak_dask, mzpeak_dask.cli; "
        "print(sorted({m.split('.')[0] for m in sys.modules} "
        "& {'dask', 'distributed', 'zarr', 'h5py'}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_a_conversion_loads_the_archive_reader_only_to_open_an_archive(tmp_path: Path) -> None:
    """A conversion (the command line's import too) leaves the archive reader, its validator
    and the checks of a batch unloaded; ``mzpeak_dask.open_archive`` loads them."""
    output = tmp_path / "small.mzpeak"
    code = (
        "import sys, mzpeak_dask, mzpeak_dask.cli; "
        f"mzpeak_dask.convert({str(SMALL)!r}, {str(output)!r}); "
        "print(sorted(m for m in sys.modules if m.startswith('mzpeak_dask.read.'))); "
        f"print(len(mzpeak_dask.open_archive({str(output)!r})))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["[]", "48"]


# The package's stages in the order the data flows (docs/internals.md draws them): each
# top-level module or package belongs to one, and imports only from its own stage and those
# before it.
STAGES = {
    "foundations": ["_version", "errors", "support", "format", "options"],
    "storage": ["storage"],
    "the model": ["model"],
    "parsing": ["codecs", "transforms", "readers"],
    "encoding": ["parquet_stitch", "layouts", "tables", "encode"],
    "the archive": ["archive", "read"],
    "running": ["parallel", "transfer", "convert"],
    "repositories": ["batch"],
    "after the fact": ["zarr_runs", "export", "analysis"],
    "the command": ["cli", "__main__"],
}


def test_the_stages_hold_every_module_and_import_only_backwards() -> None:
    rank = {
        f"{PACKAGE}.{name}": k for k, names in enumerate(STAGES.values()) for name in names
    }
    graph = package_graph(import_graph())
    assert sorted(set(graph) - {PACKAGE}) == sorted(rank)
    forward = [(a, b) for a in rank for b in graph[a] if b in rank and rank[b] > rank[a]]
    assert forward == []


def test_the_top_level_is_the_package_face() -> None:
    """Only the public API, its errors and options, and the front end sit at the top; every
    other module lives in the package of its stage."""
    top = sorted(p.stem for p in (ROOT / PACKAGE).glob("*.py"))
    assert top == ["__init__", "__main__", "_version", "convert", "errors", "options"]
