"""An mzXML object in a bucket is read by ranges where it lies, like an indexed mzML: the
survey reads its scan index, each partition's worker its own span, with nested scans cut
anywhere; the archive equals the local conversion's and no GET asks for the whole object."""

from __future__ import annotations

import pytest

from mzpeak_dask import ConvertOptions
from mzpeak_dask.readers.mzxml_ranges import balanced

from ..conftest import DATA
from ..helpers.s3 import assert_converted_by_ranges

CASES = {
    # Fusion SPS-MS3 with an index, in partitions of 3 scans
    "TMT10-Trial-8.mzXML": (DATA / "depthcharge" / "TMT10-Trial-8.mzXML", 3),
    # MS2 scans nested in an MS1 scan, no index (indexOffset 0): cut inside the parent
    "MzXMLFile_1_compressed.mzXML": (DATA / "openms" / "MzXMLFile_1_compressed.mzXML", 1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_mzxml_in_a_bucket_is_converted_by_ranges_as_locally(
    s3_endpoint, bucket, staging, tmp_path, name
):
    source, items = CASES[name]
    options = ConvertOptions(partition_items=items)
    assert_converted_by_ranges(s3_endpoint, bucket, staging, tmp_path, source, options)


def test_a_span_cut_inside_nested_scans_is_balanced():
    body = b'<scan num="2"/></scan><scan num="3"><peaks/><scan num="4">'
    document, lead = balanced(body)
    assert lead == 1
    assert document == (b'<scan num="mzpeak-dask-placeholder-0">' + body + b"</scan></scan>")
