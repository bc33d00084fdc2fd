"""Parquet files assembled from parts without decoding a page.

Workers write each partition's rows as a complete Parquet file (its row groups, pages, statistics
and page index, with the archive's writer properties); :class:`~.stitch.Stitcher` concatenates
such parts into one file by copying their bytes and writing one footer. The footer and the page
index are Thrift structs in the compact protocol, read and written by :mod:`.thrift_compact`.
"""

from .stitch import Stitcher, read_footer, stitch
from .thrift_compact import List, Struct, ThriftError, dumps, loads

__all__ = ["List", "Stitcher", "Struct", "ThriftError", "dumps", "loads", "read_footer", "stitch"]
