"""The plan of an input read where it lies costs few round trips: the object's size is asked
once, its head and its tail (with the index) are fetched once each, and the items whose
offsets the survey checks are the ones the plan samples, fetched whole side by side, so the
sample costs no request of its own."""

from __future__ import annotations

from collections import Counter

import numpy as np

from mzpeak_dask.options import ConvertOptions
from mzpeak_dask.partition import plan_run
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
    assert methods["HEAD"] == 1, log  # the size, asked once for the whole plan
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
