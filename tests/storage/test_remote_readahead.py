"""A conversion in this process reads an input in storage partition after partition; each
partition's bytes are fetched while the one before is parsed, its SHA-256 is taken from those
reads, and a process told nothing never reads ahead."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from mzpeak_dask import ConvertOptions, convert
from mzpeak_dask.errors import StorageError
from mzpeak_dask.partition import plan_run
from mzpeak_dask.storage import readahead
from mzpeak_dask.storage.inputs import read_range

from ..conftest import BUNDLED, INLINE
from ..helpers.archives import assert_same_members
from ..helpers.servers import range_span


def _gets(server) -> list[str]:
    return [entry[2] for entry in server.served.log if entry[0] == "GET"]


def _header(span) -> str:
    return f"bytes={span[0]}-{span[1] - 1}"


def test_reading_an_expected_span_fetches_the_ones_after_it_in_one_request(served):
    url = f"{served.url}/small.mzML"
    spans = [(1000, 5000), (5000, 9000), (9000, 12000), (20000, 30000)]
    served.served.reset()
    readahead.expect_reads(url, spans)
    try:
        first = read_range(url, *spans[0])  # alone: the conversion waits for it
        order = readahead._orders[url]
        order.ahead[1].result()  # the two consecutive spans after it, fetched beside it
        assert _gets(served) == [_header(spans[0]), _header((5000, 12000))]
        second = read_range(url, *spans[1])  # no request of its own: it starts the last's
        order.ahead[2].result()
        third = read_range(url, *spans[2])
        assert len(_gets(served)) == 3
        fourth = read_range(url, *spans[3])
    finally:
        readahead.forget(url)
    data = (BUNDLED / "small.mzML").read_bytes()
    assert (first, second, third, fourth) == tuple(data[a:b] for a, b in spans)
    assert _gets(served) == [_header(s) for s in [spans[0], (5000, 12000), spans[3]]]
    assert url not in readahead._orders


def test_a_process_told_nothing_never_reads_ahead(served):
    url = f"{served.url}/small.mzML"
    served.served.reset()
    read_range(url, 1000, 5000)
    read_range(url, 5000, 9000)
    assert _gets(served) == [_header((1000, 5000)), _header((5000, 9000))]


def test_an_inline_conversion_fetches_each_partition_once(served, tmp_path):
    options = ConvertOptions(partition_items=12)  # 4 partitions of 12: none is a sampled span
    local = tmp_path / "local.mzpeak"
    expected = convert(BUNDLED / "small.mzML", local, options, cluster=INLINE)
    served.served.reset()
    url = f"{served.url}/small.mzML"
    result = convert(url, tmp_path / "remote.mzpeak", options, cluster=INLINE)
    counts = Counter(_gets(served))
    assert counts and max(counts.values()) == 1, counts  # read ahead, never twice
    assert_same_members(local, tmp_path / "remote.mzpeak")
    assert url not in readahead._orders  # dropped when the run ended
    # its SHA-256 from the partitions' reads and the bytes between them: the object is read
    # once (and the plan's sample), not streamed once more for the digest (2.38x before)
    assert result.input_sha256 == expected.input_sha256
    size = (BUNDLED / "small.mzML").stat().st_size
    assert served.served.bytes < 1.5 * size, (served.served.bytes, size)
    # the bytes between the partitions (the header, the index), which the digest needs, come
    # from what the plan's survey fetched: no GET of their own
    plan = plan_run(BUNDLED / "small.mzML", tmp_path, options)
    spans = [(p.items.byte_start, p.items.byte_stop) for p in plan.partitions]
    ranges = [range_span(h, size) for h in counts]
    starts, stops = {a for a, _ in spans}, {b for _, b in spans}
    reads = [(c, d) for c, d in ranges if c in starts]  # the partitions' (and the plan's)
    for a, b in spans[:-1]:  # each spectrum partition within one request (consecutive ones
        # share it)
        assert sum(1 for c, d in reads if c <= a and b - 1 <= d) == 1, (a, b)
    assert len(reads) < len(spans), (reads, spans)
    # the first partition came with the first sampled spectra, in the plan's request, and
    # the chromatogram with the tail the survey fetched: neither has a request of its own
    assert _header(spans[0]) not in counts and _header(spans[-1]) not in counts, counts
    assert {d + 1 for _, d in reads} - stops, reads  # (the plan's ends past the partition)
    edges = [0, *(x for span in spans for x in span), size]
    gaps = {_header(g) for g in zip(edges[::2], edges[1::2], strict=True) if g[1] > g[0]}
    assert gaps and not gaps & set(counts), sorted(gaps & set(counts))


def test_the_digest_of_spans_read_in_order_is_the_objects_else_it_is_refused(served):
    url = f"{served.url}/small.mzML"
    data = (BUNDLED / "small.mzML").read_bytes()
    spans = [(1000, 5000), (5000, 9000), (20000, 30000)]
    try:
        digest = readahead.expect_reads(url, spans, len(data))
        for span in spans:
            read_range(url, *span)
        assert digest.result() == hashlib.sha256(data).hexdigest()
        digest = readahead.expect_reads(url, spans, len(data))
        for span in (spans[0], spans[2], spans[1]):  # out of order: the caller streams it
            read_range(url, *span)
        with pytest.raises(StorageError, match="not read once in order"):
            digest.result()
    finally:
        readahead.forget(url)
