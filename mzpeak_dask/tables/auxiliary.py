"""Auxiliary arrays: signal arrays kept in the metadata row instead of a data column.

Used for an array whose length differs from the spectrum's main axis, or whose kind or data
type does not fit the run's data columns. Each is stored as raw little-endian bytes, the mzML
``binaryDataArray`` equivalent (format doc section 2.4). Compression is "none" as the
specification recommends; Parquet's own ZSTD compresses the column.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pyarrow as pa

from ..codecs import numpress
from ..errors import ArchiveError
from ..format import vocabulary as V
from ..model.records import Param, SignalArray
from ..support.arrow_build import from_list, from_numpy
from .params import PARAM_LIST_TYPE, PARAM_TYPE, param_from_row, param_row, params_from_rows

AUXILIARY_TYPE = pa.struct(
    [
        pa.field("data", pa.large_list(pa.field("item", pa.uint8(), nullable=False))),
        pa.field("name", PARAM_TYPE),
        pa.field("data_type", pa.string()),
        pa.field("compression", pa.string()),
        pa.field("unit", pa.string()),
        pa.field("parameters", PARAM_LIST_TYPE),
        pa.field("data_processing_ref", pa.large_string()),
    ]
)
AUXILIARY_LIST_TYPE = pa.large_list(pa.field("item", AUXILIARY_TYPE))


def _data_type(values: np.ndarray) -> str:
    if values.dtype == np.uint8:
        return V.ASCII
    return V.dtype_accession(values.dtype)


def _name_param(array: SignalArray) -> Param:
    if array.array_type == V.NON_STANDARD_ARRAY:
        return Param("non-standard data array", V.NON_STANDARD_ARRAY, array.name, array.unit)
    return Param(array.name, array.array_type, None, array.unit)


def auxiliary_column(rows: list[list[SignalArray]]) -> pa.LargeListArray:
    """One ``auxiliary_arrays`` list per row, built from numpy buffers without Python byte lists."""
    arrays = [a for row in rows for a in row]
    payloads = [np.ascontiguousarray(a.values).view(np.uint8).reshape(-1) for a in arrays]
    sizes = np.array([len(p) for p in payloads], dtype=np.int64)
    data_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    flat = np.concatenate(payloads) if payloads else np.zeros(0, np.uint8)
    data = pa.LargeListArray.from_arrays(
        from_numpy(data_offsets),
        from_numpy(flat, pa.uint8()),
        type=AUXILIARY_TYPE.field("data").type,
    )
    other = {
        "name": from_list([param_row(_name_param(a)) for a in arrays], PARAM_TYPE),
        "data_type": from_list([_data_type(a.values) for a in arrays], pa.string()),
        "compression": from_list([V.NO_COMPRESSION] * len(arrays), pa.string()),
        "unit": from_list([a.unit for a in arrays], pa.string()),
        "parameters": from_list(
            [[param_row(p) for p in a.params] for a in arrays], PARAM_LIST_TYPE
        ),
        "data_processing_ref": from_list(
            [a.data_processing_ref for a in arrays], pa.large_string()
        ),
    }
    items = pa.StructArray.from_arrays(
        [data if f.name == "data" else other[f.name] for f in AUXILIARY_TYPE],
        fields=list(AUXILIARY_TYPE),
    )
    row_offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    return pa.LargeListArray.from_arrays(from_numpy(row_offsets), items, type=AUXILIARY_LIST_TYPE)


_DECOMPRESS = {
    V.NO_COMPRESSION: lambda b: b,
    V.ZLIB_COMPRESSION: zlib.decompress,
}


def decode_auxiliary(entry: dict[str, Any]) -> SignalArray:
    """A stored auxiliary array (as a Python dict row) back into a :class:`SignalArray`."""
    raw = bytes(bytearray(entry["data"] or ()))
    compression = entry.get("compression") or V.NO_COMPRESSION
    data_type = entry.get("data_type") or V.FLOAT64
    name = param_from_row(entry.get("name") or {})
    try:
        if compression in numpress.DECODERS:
            values = numpress.DECODERS[compression](np.frombuffer(raw, np.uint8))
            values = values.astype(V.DTYPE_OF.get(data_type, np.float64))
        else:
            values = _decoded_values(_DECOMPRESS[compression](raw), data_type)
    except KeyError:
        raise ArchiveError(f"auxiliary array uses unsupported compression {compression}") from None
    if name.accession == V.NON_STANDARD_ARRAY:
        array_type, array_name = V.NON_STANDARD_ARRAY, str(name.value or name.name)
    else:
        array_type, array_name = name.accession or V.NON_STANDARD_ARRAY, name.name or ""
    return SignalArray(
        array_type=array_type,
        name=array_name,
        unit=entry.get("unit") or name.unit,
        values=values,
        params=params_from_rows(entry.get("parameters")),
        data_processing_ref=entry.get("data_processing_ref"),
    )


def _decoded_values(raw: bytes, data_type: str) -> np.ndarray:
    if data_type == V.ASCII:
        return np.frombuffer(raw, dtype=np.uint8).copy()
    return np.frombuffer(raw, dtype=V.DTYPE_OF[data_type]).copy()
