"""``mzpeak-dask batch`` over a tree of real files with bad inputs mixed in: isolation,
reports, resume, changed inputs, a killed batch, Ctrl-C — on a real LocalCluster."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from mzpeak_dask.read.validate import ERROR, validate
from mzpeak_dask.readers.binary import MAX_ARRAY_VALUES

from ..conftest import BUNDLED, DATA
from ..helpers.archives import member_digests
from ..helpers.batch_inputs import huge_spectrum_mzml
from ..helpers.replicate import replicate
from .commands import batch, converted_count, report, wait_for_first

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
GOOD = {
    "small.mzML": BUNDLED / "small.mzML",
    "TMT10-Trial-8.mgf": DATA / "depthcharge" / "TMT10-Trial-8.mgf",
    "test.mzXML": DATA / "pyteomics" / "test.mzXML",
    "runs/small.mzMLb": DATA / "mzdata" / "small.mzMLb",
    "runs/deeper/tiny.pwiz.1.1.mzML": DATA / "pyteomics" / "tiny.pwiz.1.1.mzML",
    "runs/deeper/three_test_scans.mzML.gz": None,  # gzipped below
}
BAD = [
    "runs/truncated.mzML",
    "runs/notes.mzML",
    "runs/FileFilter_39_input_corrupt.mzML",
    "runs/huge.mzML",
]


def make_tree(root: Path) -> Path:
    for name, source in GOOD.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source is None:
            import gzip

            with (
                open(DATA / "mzdata" / "three_test_scans.mzML", "rb") as f,
                gzip.open(target, "wb") as out,
            ):
                out.write(f.read())
        else:
            shutil.copy(source, target)
    data = (BUNDLED / "small.mzML").read_bytes()
    (root / BAD[0]).write_bytes(data[: len(data) // 2])
    (root / BAD[1]).write_text("sample sheet, not mass spectra\n")
    shutil.copy(DATA / "openms" / "FileFilter_39_input_corrupt.mzML", root / BAD[2])
    # the most points one array may hold: 1.6 GB at its peak, which kills a 700 MB worker
    huge_spectrum_mzml(root / BAD[3], MAX_ARRAY_VALUES)
    return root


@pytest.fixture(scope="module")
def first_run(tmp_path_factory) -> tuple[Path, Path, subprocess.CompletedProcess]:
    root = tmp_path_factory.mktemp("batch")
    source, output = make_tree(root / "repository"), root / "mzpeak"
    return source, output, batch(source, output)


def test_good_inputs_convert_and_bad_ones_fail_with_reasons(first_run) -> None:
    source, output, result = first_run
    assert result.returncode != 0, result.stderr
    files = report(output)
    assert len(files) == len(GOOD) + len(BAD), result.stderr
    for name in GOOD:
        record = files[Path(name).name]
        assert record["status"] == "converted", record
        archive = Path(record["output"])
        assert archive.is_file()
        assert not [p for p in validate(archive) if p.severity == ERROR]
        assert record["input_sha256"] == hashlib.sha256((source / name).read_bytes()).hexdigest()
        assert record["members"] == member_digests(archive)
        assert record["spectra"] > 0 and record["output_bytes"] == archive.stat().st_size
    assert (output / "runs" / "deeper" / "three_test_scans.mzpeak").is_file()  # mirrored tree
    reasons = {name: files[Path(name).name]["error"] for name in BAD}
    assert "truncated" in reasons[BAD[0]]
    assert "not a recognised MS data file" in reasons[BAD[1]]
    assert "spectrum=1" in reasons[BAD[2]] and "numpress" in reasons[BAD[2]]
    assert "worker process died" in reasons[BAD[3]]
    for name in BAD:
        assert files[Path(name).name]["status"] == "failed"
        assert "\n" not in reasons[name] and str(source / name) in reasons[name]
        assert f"failed: {source / name}" in result.stderr
    leftovers = [p for p in output.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


def test_reports_and_catalog(first_run) -> None:
    _, output, _ = first_run
    page = (output / "batch_report.html").read_text()
    assert page.count("<figure class=plot><svg") == 2  # size ratios, throughput
    assert "<polyline" in page and "Failures" in page and "truncated" in page
    catalog = pd.read_parquet(output / "catalog.parquet")
    assert len(catalog) == len(GOOD)
    small = catalog[catalog.source.str.endswith("/small.mzML")].iloc[0]
    assert (small.spectra, small.ms1_spectra, small.ms2_spectra) == (48, 14, 34)
    assert small.rt_max > small.rt_min and small.mz_max > small.mz_min
    assert "LTQ FT" in small.instrument
    assert json.loads(small.member_sha256)["spectra_data.parquet"]


def test_resume_converts_nothing_new_then_exactly_the_changed_input(first_run) -> None:
    source, output, _ = first_run
    before = {name: report(output)[Path(name).name]["members"] for name in GOOD}
    again = batch(source, output, "--resume")
    files = report(output)
    assert all(files[Path(name).name]["status"] == "skipped" for name in GOOD), again.stderr
    assert all(files[Path(name).name]["status"] == "failed" for name in BAD)
    shutil.copy(DATA / "pyteomics" / "test.mgf", source / "TMT10-Trial-8.mgf")  # changed
    batch(source, output, "--resume")
    files = report(output)
    changed = files["TMT10-Trial-8.mgf"]
    assert changed["status"] == "converted" and changed["spectra"] == 2
    assert changed["members"] != before["TMT10-Trial-8.mgf"]
    others = [name for name in GOOD if name != "TMT10-Trial-8.mgf"]
    assert all(files[Path(name).name]["status"] == "skipped" for name in others)


def _replicated_tree(root: Path) -> Path:
    root.mkdir(parents=True)
    for k in range(4):
        replicate(BUNDLED / "small.mzML", root / f"run{k}.mzML", copies=3 + k)
    return root


def test_killed_batch_resumes_to_the_same_outputs(tmp_path) -> None:
    source = _replicated_tree(tmp_path / "repository")
    uninterrupted = tmp_path / "uninterrupted"
    # partitions fix the row-group cuts: the same partitioning for all three batches
    assert batch(source, uninterrupted, "--partition-items", "20").returncode == 0
    output = tmp_path / "killed"
    process = batch(source, output, "--partition-items", "20", wait=False)
    wait_for_first(process, output)
    os.killpg(process.pid, signal.SIGKILL)  # a wall-time limit: the whole job, workers too
    process.communicate(timeout=60)  # reaps it and closes its pipes
    assert converted_count(output) < 4
    resumed = batch(source, output, "--resume", "--partition-items", "20")
    assert resumed.returncode == 0, resumed.stderr
    for k in range(4):
        name = f"run{k}.mzpeak"
        assert member_digests(output / name) == member_digests(uninterrupted / name)
    assert not [p for p in output.rglob("*") if p.name.endswith(".tmp")]


def test_ctrl_c_stops_cleanly(tmp_path) -> None:
    source = _replicated_tree(tmp_path / "repository")
    output = tmp_path / "out"
    process = batch(source, output, "--partition-items", "20", wait=False)
    wait_for_first(process, output)
    os.kill(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    files = report(output)
    finished = [f for f in files.values() if f["status"] == "converted"]
    pending = [f for f in files.values() if f["status"] == "pending"]
    assert finished and pending and len(finished) + len(pending) == 4
    for f in finished:
        assert not [p for p in validate(f["output"]) if p.severity == ERROR]
    for f in pending:
        assert not Path(f["output"]).exists()
    assert not [p for p in output.rglob("*") if p.name.endswith(".tmp")]
