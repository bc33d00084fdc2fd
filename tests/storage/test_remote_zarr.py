"""The Zarr export to a bucket (through zarr's FsspecStore) and to one file per run (a ZipStore
that zarr-python reads), and the chromatograms read back from every form, equal to those of
the archives themselves."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest
import zarr
from zarr.storage import ZipStore

from mzpeak_dask import to_zarr
from mzpeak_dask.analysis import open_runs, xic
from mzpeak_dask.zarr_runs.store import enable_rectilinear

from ..conftest import INLINE
from ..helpers.cli import run_cli
from ..helpers.servers import s3_client

pytestmark = pytest.mark.slow

TARGETS = [445.1200, 371.1010, 1221.9906]


@pytest.fixture(scope="module")
def archives(reference_archives):
    return [reference_archives / "small.mzpeak", reference_archives / "ours.mzpeak"]


@pytest.fixture(scope="module")
def expected(archives):
    return xic([str(a) for a in archives], TARGETS, ppm=20)


def assert_same_xics(found: dict, expected: dict) -> None:
    assert sorted(found) == sorted(expected)
    for name in expected:
        pd.testing.assert_frame_equal(found[name], expected[name])
    assert all((frame[TARGETS].to_numpy() > 0).any() for frame in expected.values())


def test_single_file_export_is_one_zip_per_run_that_zarr_reads(tmp_path, archives, expected):
    out = tmp_path / "runs"
    results = to_zarr(archives, out, cluster=INLINE, single_file=True)
    assert sorted(os.listdir(out)) == ["ours.zarr.zip", "small.zarr.zip"]  # <= 10 files a run
    assert [r.group for r in results] == [str(out / "small.zarr.zip"), str(out / "ours.zarr.zip")]
    folder = to_zarr(archives, tmp_path / "runs.zarr", cluster=INLINE)
    enable_rectilinear()
    for result in folder:
        name = os.path.basename(result.group)
        single = zarr.open_group(ZipStore(out / f"{name}.zarr.zip", mode="r"), mode="r")
        group = zarr.open_group(result.group, mode="r")
        assert dict(single.attrs) == dict(group.attrs)
        assert sorted(single.array_keys()) == sorted(group.array_keys())
        for key in group.array_keys():
            np.testing.assert_array_equal(single[key][:], group[key][:])
    runs = open_runs([out / "small.zarr.zip", str(out / "ours.zarr.zip")])
    assert [r.name for r in runs] == ["small", "ours"]
    assert_same_xics(xic(runs, TARGETS, ppm=20), expected)


def test_export_to_s3_then_xic_from_it(s3_endpoint, bucket, archives, expected):
    store = f"s3://{bucket}/exports/runs.zarr"
    done = run_cli(
        "export-zarr",
        *map(str, archives),
        store,
        "--cluster",
        "inline",
        "--json",
        env=os.environ.copy(),
    )
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["group"] for line in done.stdout.splitlines()] == [
        f"{store}/small",
        f"{store}/ours",
    ]
    keys = s3_client(s3_endpoint).list_objects_v2(Bucket=bucket, Prefix="exports/")
    assert not any(".tmp-" in k["Key"] or "staging" in k["Key"] for k in keys["Contents"])
    assert_same_xics(xic([store], TARGETS, ppm=20), expected)
    shown = run_cli(
        "xic", store, "--mz", str(TARGETS[0]), "--ppm", "20", "--json", env=os.environ.copy()
    )
    assert shown.returncode == 0, shown.stderr
    runs = [json.loads(line)["run"] for line in shown.stdout.splitlines()]
    assert runs == ["ours", "small"]
    again = run_cli(
        "export-zarr", str(archives[0]), store, "--cluster", "inline", env=os.environ.copy()
    )
    assert again.returncode != 0 and "already exists" in again.stderr


def test_single_file_export_to_s3_is_read_there(s3_endpoint, bucket, archives, expected):
    store = f"s3://{bucket}/single"
    to_zarr(archives, store, cluster=INLINE, single_file=True)
    listed = s3_client(s3_endpoint).list_objects_v2(Bucket=bucket, Prefix="single/")
    assert sorted(k["Key"] for k in listed["Contents"]) == [
        "single/ours.zarr.zip",
        "single/small.zarr.zip",
    ]
    runs = open_runs([f"{store}/small.zarr.zip", f"{store}/ours.zarr.zip"])
    assert_same_xics(xic(runs, TARGETS, ppm=20), expected)
