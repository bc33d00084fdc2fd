"""The plan of an input read where it lies costs few round trips: the object's size comes
with its head and its tail (with the index), fetched side by side once each, and the items whose
offsets the survey checks are the ones the plan samples, fetched whole side by side, so the
sample costs no request of its own."""

from __future__ import annotations

from collections import Counter

import numpy as np

from mzpeak_dask.encode.plan import plan_run
from mzpeak_dask.options import ConvertOptions
from mzpeak_dask.storage.origins import mark_origin

from ..conftest import BUNDLED


def test_the_plan_of_an_indexed_mzml_in_storage_takes_few_requests(served, tmp_path):
    staged = tmp_path / "small.mzML"
    mark_origin(staged, f"{served.url}/small.mzML")  # how a job notes an input read by ranges
    local = plan_run(BUNDLED / "small.mzML", tmp_path, ConvertOptions())
    served.served.reset()
    plan = plan_run(staged, tmp_path, ConvertOptions())
    log = list(served.served.log)
    methods = Counter(entry[0] for entry in log)
    ranges = [entry[2] for entry in log if entry[0] == "GET"]
    print(f"plan: {len(log)} requests ({dict(methods)}), {served.served.bytes:,} bytes")
    # no HEAD: the size comes with the head and the tail, fetched side by side first
    assert methods["HEAD"] == 0, log
    assert sorted(ranges[:2]) == ["bytes=-262144", "bytes=0-262143"], log
    assert len(ranges) == len(set(ranges)), ranges  # no span fetched twice
    # the head, the tail with the index, the sampled spectra (8 spans fetched side by side)
    # and the chromatogram: at most 12 GETs (29, and 3 HEADs, when the checks and the sample
    # were fetched apart)
    assert len(ranges) <= 12, ranges
    assert plan.survey.spectrum_count == local.survey.spectrum_count == 48
    assert (plan.survey.spectrum_offsets == local.survey.spectrum_offsets).all()
    assert plan.spec.schemas.keys() == local.spec.schemas.keys()
    for entity, schema in local.spec.schemas.items():
        assert plan.spec.schemas[entity] == schema, entity


def test_an_index_listing_no_item_of_a_kind_is_checked_without_a_read(served):
    """An index may list no chromatogram: no sampled item, nothing fetched, nothing wrong."""
    from mzpeak_dask.readers.bytesource import ByteSource
    from mzpeak_dask.readers.mzml import _points_at

    with ByteSource(f"{served.url}/small.mzML") as source:
        served.served.reset()
        assert _points_at(source, np.array([], dtype=np.int64), b"<chromatogram")
    assert served.served.requests == 0


def test_a_plan_fetches_no_more_of_the_first_partition_than_its_sampled_spectra(served, tmp_path):
    """The plan task reads the sampled spectra, not the partitions: the first partition is
    read by its own task."""
    options = ConvertOptions(partition_items=12)  # 48 spectra: 4 partitions of 12
    first = plan_run(BUNDLED / "small.mzML", tmp_path, options).partitions[0].items
    url = f"{served.url}/small.mzML"
    served.served.reset()
    plan_run(url, tmp_path, options)
    gets = [entry[2] for entry in served.served.log if entry[0] == "GET"]
    assert all(
        not g.startswith(f"bytes={first.byte_start}-") or int(g.split("-")[1]) + 1 < first.byte_stop
        for g in gets
    ), gets
