"""Inspecting each batch output (validation, member digests, TIC thumbnail): on the cluster
when its workers see the output folder, here otherwise; a broken archive is reported."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from mzpeak_dask import ClusterOptions, convert
from mzpeak_dask.batch.inspect import Inspector

from ..conftest import BUNDLED
from ..helpers.archives import member_digests

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def _archives(folder: Path) -> tuple[Path, Path]:
    good = folder / "small.mzpeak"
    convert(BUNDLED / "small.mzML", good, cluster=ClusterOptions(cluster="inline"))
    broken = folder / "broken.mzpeak"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(broken, "w") as out:
        for info in src.infolist():
            if info.filename != "spectra_metadata.parquet":  # the index still names it
                out.writestr(info, src.read(info.filename))
    return good, broken


def _check(results: dict, good: Path) -> None:
    assert results["good"]["errors"] == []
    assert results["good"]["members"] == member_digests(good)
    assert len(results["good"]["tic"]) == 14  # the 14 MS1 spectra of small.mzML
    assert results["broken"]["errors"]
    assert any("spectra_metadata.parquet" in e for e in results["broken"]["errors"])


def test_inspection_runs_on_workers_that_see_the_folder(local_client, tmp_path) -> None:
    good, broken = _archives(tmp_path)
    inspector = Inspector(local_client, tmp_path)
    assert inspector.client is not None
    inspector.submit("good", good)
    inspector.submit("broken", broken)
    _check(dict(inspector.finished(wait=True)), good)
    prefixes = local_client.run_on_scheduler(
        lambda dask_scheduler: list(dask_scheduler.task_prefixes)
    )
    assert "inspect_output" in prefixes
    assert inspector.finished(wait=True) == []


def test_inspection_without_a_cluster_runs_here(tmp_path) -> None:
    good, broken = _archives(tmp_path)
    inspector = Inspector(None, tmp_path)
    assert inspector.client is None
    inspector.submit("good", good)
    inspector.submit("broken", broken)
    _check(dict(inspector.finished()), good)
