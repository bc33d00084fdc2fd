"""What a batch converts and records, whatever the paths look like: names that are not UTF-8
(converted, recorded and reported so that the exact path can be recovered), SOURCE typed as a
relative or an absolute path, one file named several times, outputs that would be inputs."""

from __future__ import annotations

import json
import os
import resource
import shutil
import zipfile
from pathlib import Path
from urllib.parse import unquote_to_bytes, urlparse

import pandas as pd
import pytest

from mzpeak_dask import open_archive
from mzpeak_dask.batch.state import BatchState
from mzpeak_dask.read.validate import ERROR, validate

from ..conftest import BUNDLED, DATA
from ..helpers.cli import run_cli
from .commands import batch

pytestmark = pytest.mark.slow  # whole batches through the command line

TINY = DATA / "pyteomics" / "tiny.pwiz.1.1.mzML"
ODD_NAME = os.fsdecode(b"zz\xff.mzML")  # a Latin-1 byte: not UTF-8
ODD_FOLDER = os.fsdecode(b"caf\xe9")
BAD_NAME = os.fsdecode(b"bad\xfe.mzML")


def _exact(uri: str) -> bytes:
    return unquote_to_bytes(urlparse(uri).path)


def _strictly_utf8(value: object) -> None:
    """Every string encodes as UTF-8 (no lone surrogates standing for undecodable bytes)."""
    if isinstance(value, str):
        value.encode("utf-8")
    elif isinstance(value, dict):
        for k, v in value.items():
            _strictly_utf8(k)
            _strictly_utf8(v)
    elif isinstance(value, list):
        for v in value:
            _strictly_utf8(v)


def _odd_tree(root: Path) -> dict[str, Path]:
    (root / ODD_FOLDER).mkdir(parents=True)
    inputs = {
        "a": root / "a.mzML",
        "b": root / "b.mzML",
        "odd": root / ODD_NAME,
        "folder": root / ODD_FOLDER / "c.mzXML",
    }
    shutil.copy(BUNDLED / "small.mzML", inputs["a"])
    shutil.copy(TINY, inputs["b"])
    shutil.copy(TINY, inputs["odd"])
    shutil.copy(DATA / "pyteomics" / "test.mzXML", inputs["folder"])
    (root / BAD_NAME).write_text("a sample sheet, not mass spectra\n")
    return inputs


@pytest.mark.cluster
def test_names_that_are_not_utf8_never_sink_the_batch(tmp_path: Path) -> None:
    source, output = tmp_path / "repository", tmp_path / "mzpeak"
    inputs = _odd_tree(source)
    result = batch(source, output)
    assert result.returncode == 1, result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert "failed: " in result.stderr and "bad\\xfe.mzML" in result.stderr
    outputs = {
        "a": output / "a.mzpeak",
        "b": output / "b.mzpeak",
        "odd": output / os.fsdecode(b"zz\xff.mzpeak"),
        "folder": output / ODD_FOLDER / "c.mzpeak",
    }
    for name, archive in outputs.items():
        assert not [p for p in validate(archive) if p.severity == ERROR], name
    with zipfile.ZipFile(outputs["odd"]) as z:
        index = z.read("mzpeak_index.json").decode("utf-8")
    assert "\\udc" not in index and "zz\\\\xff.mzML" in index  # the name, readable
    # the report is strict UTF-8 JSON, and its URIs give back the exact paths
    doc = json.loads((output / "batch_report.json").read_bytes().decode("utf-8"))
    _strictly_utf8(doc)
    files = {_exact(f["input_uri"]): f for f in doc["files"]}
    assert set(files) == {os.fsencode(p) for p in inputs.values()} | {
        os.fsencode(source / BAD_NAME)
    }
    for name, path in inputs.items():
        record = files[os.fsencode(path)]
        assert record["status"] == "converted", record
        assert _exact(record["output_uri"]) == os.fsencode(outputs[name])
    failed = files[os.fsencode(source / BAD_NAME)]
    assert failed["status"] == "failed" and "bad\\xfe.mzML" in failed["error"]
    assert doc["summary"]["converted"] == 4 and doc["summary"]["failed"] == 1
    page = (output / "batch_report.html").read_bytes().decode("utf-8")
    assert "zz\\xff.mzML" in page
    catalog = pd.read_parquet(output / "catalog.parquet")
    assert sorted(catalog.source_uri.map(_exact)) == sorted(map(os.fsencode, inputs.values()))
    assert sorted(catalog.archive_uri.map(_exact)) == sorted(map(os.fsencode, outputs.values()))
    state = BatchState(output)
    try:
        record = state.get(str(inputs["odd"]))
        assert record["status"] == "converted" and record["output"] == str(outputs["odd"])
    finally:
        state.close()
    with open_archive(outputs["odd"]) as archive:
        assert len(archive) == 4
    # and every resume reads the state back: nothing is converted again
    again = run_cli("batch", str(source), str(output), "--resume", "--cluster", "inline")
    assert again.returncode == 1 and "internal error" not in again.stderr, again.stderr
    statuses = {os.fsdecode(_exact(f["input_uri"])): f["status"] for f in report_files(output)}
    assert all(statuses[str(p)] == "skipped" for p in inputs.values()), statuses


def report_files(output: Path) -> list[dict]:
    return json.loads((output / "batch_report.json").read_text())["files"]


def _two_runs(root: Path) -> None:
    root.mkdir()
    shutil.copy(TINY, root / "a.mzML")
    shutil.copy(DATA / "pyteomics" / "test.mzXML", root / "b.mzXML")


def test_resume_knows_a_source_typed_relative_or_absolute(tmp_path: Path) -> None:
    _two_runs(tmp_path / "repository")
    first = run_cli("batch", "repository", "mzpeak", "--cluster", "inline", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    again = run_cli(
        "batch",
        str(tmp_path / "repository"),
        str(tmp_path / "mzpeak"),
        "--resume",
        "--cluster",
        "inline",
    )
    assert again.returncode == 0, again.stderr
    assert {f["status"] for f in report_files(tmp_path / "mzpeak")} == {"skipped"}
    catalog = pd.read_parquet(tmp_path / "mzpeak" / "catalog.parquet")
    assert sorted(Path(s).name for s in catalog.source) == ["a.mzML", "b.mzXML"]


def test_a_manifest_naming_one_file_three_times_converts_it_once(tmp_path: Path) -> None:
    _two_runs(tmp_path / "repository")
    manifest = tmp_path / "manifest.txt"
    manifest.write_text(
        "repository/a.mzML\n"
        "./repository/../repository/a.mzML\n"
        f"{tmp_path / 'repository' / 'a.mzML'}\n"
    )
    result = run_cli("batch", str(manifest), str(tmp_path / "mzpeak"), "--cluster", "inline")
    assert result.returncode == 0, result.stderr
    files = report_files(tmp_path / "mzpeak")
    assert [(Path(f["input"]).name, f["status"]) for f in files] == [("a.mzML", "converted")]
    assert len(pd.read_parquet(tmp_path / "mzpeak" / "catalog.parquet")) == 1


def test_an_output_that_would_be_an_input_fails_alone(tmp_path: Path) -> None:
    source = tmp_path / "repository"
    _two_runs(source)
    disguised = source / "c.mzpeak"  # an mzML named like an archive: its output is itself
    shutil.copy(TINY, disguised)
    before = disguised.read_bytes()
    manifest = tmp_path / "manifest.txt"
    manifest.write_text("repository/a.mzML\nrepository/b.mzXML\nrepository/c.mzpeak\n")
    (source / "b.mzpeak").symlink_to(source / "b.mzXML")  # the output of b is a link to b
    result = run_cli("batch", str(manifest), str(source), "--cluster", "inline")
    assert result.returncode == 1, result.stderr
    statuses = {Path(f["input"]).name: (f["status"], f["error"]) for f in report_files(source)}
    assert statuses["a.mzML"] == ("converted", None)
    assert statuses["b.mzXML"][0] == "failed" and "is the input" in statuses["b.mzXML"][1]
    assert statuses["c.mzpeak"][0] == "failed" and "is the input" in statuses["c.mzpeak"][1]
    assert disguised.read_bytes() == before and (source / "b.mzpeak").is_symlink()


def test_a_file_too_large_to_write_fails_alone(tmp_path: Path) -> None:
    source = tmp_path / "repository"
    source.mkdir()
    shutil.copy(TINY, source / "tiny.mzML")
    shutil.copy(BUNDLED / "small.mzML", source / "small.mzML")  # its archive is 1.5 MB

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (400_000, 400_000))

    result = run_cli(
        "batch", str(source), str(tmp_path / "mzpeak"), "--cluster", "inline", preexec_fn=limit
    )
    assert result.returncode == 1 and "internal error" not in result.stderr, result.stderr
    files = {Path(f["input"]).name: f for f in report_files(tmp_path / "mzpeak")}
    assert files["tiny.mzML"]["status"] == "converted"
    assert files["small.mzML"]["status"] == "failed"
    assert "cannot write" in files["small.mzML"]["error"]
    assert "File too large" in files["small.mzML"]["error"]
    assert ".tmp" not in files["small.mzML"]["error"]


def test_the_catalog_lists_an_archive_once_under_two_names(tmp_path: Path) -> None:
    _two_runs(tmp_path / "repository")
    output = tmp_path / "mzpeak"
    assert (
        run_cli("batch", "repository", "mzpeak", "--cluster", "inline", cwd=tmp_path).returncode
        == 0
    )
    state = BatchState(output)  # as an older version recorded them: by the paths as typed
    try:
        for record in state.all():
            relative = {k: os.path.relpath(record[k], tmp_path) for k in ("input", "output")}
            state.put({**record, **relative, "finished_at": record["finished_at"] - 60})
        assert len(state.all()) == 4
    finally:
        state.close()
    again = run_cli(
        "batch", "repository", "mzpeak", "--resume", "--cluster", "inline", cwd=tmp_path
    )
    assert again.returncode == 0, again.stderr
    catalog = pd.read_parquet(output / "catalog.parquet")
    assert sorted(Path(s).name for s in catalog.source) == ["a.mzML", "b.mzXML"]
