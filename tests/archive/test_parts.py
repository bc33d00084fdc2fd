"""Partitions written as Parquet parts on workers and stitched by the coordinator: the parts are
what crosses back (no more bytes than the archive), and each data member is byte for byte what
pyarrow writes from the same row groups."""

from __future__ import annotations

import pickle
import sys
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mzpeak_dask import ConvertOptions, convert, layouts
from mzpeak_dask.archive.parquet import data_writer_properties
from mzpeak_dask.archive.parts import write_partition
from mzpeak_dask.encode.partition import encode_partition
from mzpeak_dask.encode.plan import plan_run
from mzpeak_dask.parquet_stitch import read_footer

from ..conftest import DATA, INLINE
from ..helpers.archives import offsets_after
from ..helpers.real_runs import SMALL_MZML

UV = "DADSpectra+UVSignal272"
RUNS = {
    "profile": SMALL_MZML,
    "centroid": DATA / "depthcharge" / "TMT10-Trial-8.mzML",
    "uv": DATA / "HUPO-PSI_mzPeak" / f"TOFsulfasMS4GHzDualMode+{UV}-NoProfile.mzML",
    "chromatograms": DATA / "dialignr" / "PestMix1_8Step1Plasma1SWATH20-50.chrom.mzML",
}


def _handoff_bytes(obj: object) -> int:
    """What a worker's result takes as it crosses: pickle protocol 5 and its buffers."""
    buffers: list[pickle.PickleBuffer] = []
    meta = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    return len(meta) + sum(b.raw().nbytes for b in buffers)


@pytest.mark.parametrize("kind", list(RUNS))
def test_what_workers_hand_back_is_no_larger_than_the_archive(tmp_path: Path, kind: str) -> None:
    """Parts and packed metadata rows, partitions of 250 items (a quarter of the default)."""
    source = RUNS[kind]
    options = ConvertOptions(partition_items=250)
    plan = plan_run(source, tmp_path, options)
    assert len(plan.partitions) > 1
    offsets: dict[str, int] = {}
    handed = 0
    for partition in plan.partitions:
        encoded = encode_partition(partition, plan.spec)
        written = write_partition(encoded, offsets, plan.spec)
        assert written.offsets == offsets
        for part in written.data.values():
            assert isinstance(part, pa.Buffer)
            pq.ParquetFile(part).read()  # each part is a Parquet file on its own
        handed += _handoff_bytes(written)
        offsets = offsets_after(offsets, encoded.counts)
        # Dask weighs results by sys.getsizeof: the encoded partition is heavy, so the
        # writing step runs where it lives instead of moving it to another worker
        tables = sum(t.nbytes for t in encoded.data.values())
        assert sys.getsizeof(encoded) >= tables > 0 or not encoded.data
        assert sys.getsizeof(written) >= sum(p.size for p in written.data.values())
    archive = tmp_path / "out.mzpeak"
    result = convert(source, archive, options, cluster=INLINE)
    assert handed <= result.output_bytes, (handed, result.output_bytes)


@pytest.mark.parametrize("layout", ["point", "chunked"])
def test_stitched_members_equal_a_direct_pyarrow_write(tmp_path: Path, layout: str) -> None:
    """The archive's data member, rewritten by pyarrow from its own row groups with its own
    writer properties and key-value metadata, is the same bytes: the footer, the statistics
    and the page index the stitcher wrote are pyarrow's."""
    archive = tmp_path / "small.mzpeak"
    options = ConvertOptions(layout=layout, partition_items=7)
    convert(SMALL_MZML, archive, options, cluster=INLINE)
    member = zipfile.ZipFile(archive).read("spectra_data.parquet")
    stitched = pq.ParquetFile(pa.py_buffer(member))
    assert stitched.metadata.num_row_groups >= 48 // 7
    table = stitched.read()
    prefix = table.schema[0].name
    pairs = [(p.get(1).decode(), p.get(2).decode()) for p in read_footer(member).get(5).values]
    kv = {k: v for k, v in pairs if k != "ARROW:schema"}  # in the footer's order
    plan = plan_run(SMALL_MZML, tmp_path, options)  # the Arrow schema the workers wrote
    schema = layouts.table_schema(plan.spec.schemas["spectrum"], options)
    props = data_writer_properties(schema, options, f"{prefix}.spectrum_index")
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, schema, **props) as writer:
        for i in range(stitched.metadata.num_row_groups):
            group = stitched.read_row_group(i).cast(schema)
            writer.write_table(group, row_group_size=group.num_rows)
        writer.add_key_value_metadata(kv)
    assert sink.getvalue().to_pybytes() == member
