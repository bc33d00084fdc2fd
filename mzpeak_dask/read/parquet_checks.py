"""Opening an archive's Parquet members without trusting their footers, and turning whatever a
damaged member makes pyarrow (or the decoding after it) raise into one-line ArchiveErrors.

pyarrow sizes its buffers from a row group's ``num_rows`` before it reads a page: a footer that
claims 3e9 rows allocates gigabytes, a negative count or size fails deep inside with "Negative
size". So every footer is checked first, against what the member's bytes can hold:

* counts and sizes are not negative, every column chunk lies inside the member, the row groups'
  rows add up to the file's, and every column has at least one value (or null) per row;
* a row group holds at most ``MAX_ROWS_PER_BYTE`` rows per byte of its column chunks (real
  archives hold at most 2.3; even a run of nulls costs the index column its bits);
* a row group holds at most ``MAX_ROW_GROUP_ROWS`` rows (README, "Bad input").
"""

from __future__ import annotations

import json
import struct
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import ArchiveError, MzPeakDaskError

MAX_ROWS_PER_BYTE = 16
MAX_ROW_GROUP_ROWS = 1 << 27

# what malformed content makes pyarrow, numpy and the decoders raise
DAMAGE = (
    pa.ArrowException,
    OSError,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    OverflowError,
    struct.error,
    zipfile.BadZipFile,
    json.JSONDecodeError,
)


@contextmanager
def damaged(where: object) -> Iterator[None]:
    """Re-raise what a damaged archive makes the code below raise as one ArchiveError line."""
    try:
        yield
    except MzPeakDaskError:
        raise
    except DAMAGE as exc:
        text = str(exc).strip().splitlines()
        detail = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
        raise ArchiveError(f"{where}: malformed ({detail})") from None


def open_parquet(
    buffer: pa.Buffer | Any, where: str, metadata: pq.FileMetaData | None = None
) -> pq.ParquetFile:
    """A member as a ParquetFile whose footer has been checked (see the module docstring);
    ``buffer`` is its bytes or a range-read source of them (a remote archive's member);
    ``metadata`` its footer parsed and checked already (by another reader of the member)."""
    with damaged(where):
        source = buffer if isinstance(buffer, pa.Buffer) else buffer.open()
        pf = pq.ParquetFile(
            pa.BufferReader(buffer) if source is buffer else source, metadata=metadata
        )
    if metadata is not None:
        return pf
    problem = footer_problem(pf.metadata, buffer.size)
    if problem:
        raise ArchiveError(f"{where}: {problem}")
    return pf


def footer_problem(md: pq.FileMetaData, size: int) -> str | None:
    """What is impossible in the footer of a member of ``size`` bytes, or None."""
    rows = 0
    for i in range(md.num_row_groups):
        group = md.row_group(i)
        problem = _group_problem(group, md.num_columns, size)
        if problem:
            return f"row group {i}: {problem}"
        rows += group.num_rows
    if md.num_rows != rows:
        return f"the footer counts {md.num_rows:,} rows, its row groups {rows:,}"
    return None


def _group_problem(group: pq.RowGroupMetaData, columns: int, size: int) -> str | None:
    rows = group.num_rows
    if not 0 <= rows <= MAX_ROW_GROUP_ROWS:
        return f"{rows:,} rows (0..{MAX_ROW_GROUP_ROWS:,} allowed)"
    stored = 0
    for j in range(columns):
        chunk = group.column(j)
        problem = _chunk_problem(chunk, rows, size)
        if problem:
            return f"column {chunk.path_in_schema}: {problem}"
        stored += chunk.total_compressed_size
    if rows > MAX_ROWS_PER_BYTE * stored + MAX_ROWS_PER_BYTE:
        return f"{rows:,} rows cannot fit in its {stored:,} bytes"
    return None


def _chunk_problem(chunk: pq.ColumnChunkMetaData, rows: int, size: int) -> str | None:
    if chunk.num_values < rows:
        return f"{chunk.num_values:,} values for {rows:,} rows"
    if chunk.total_compressed_size < 0 or chunk.total_uncompressed_size < 0:
        return "a negative size"
    start = chunk.data_page_offset
    if chunk.has_dictionary_page and chunk.dictionary_page_offset is not None:
        start = min(start, chunk.dictionary_page_offset)
    if start < 0 or start + chunk.total_compressed_size > size:
        return f"its pages ({start:,} + {chunk.total_compressed_size:,}) lie outside the member"
    return None
