"""Arrow arrays built from numpy arrays and Python lists through their buffers.

``pyarrow.array()`` asks whether its argument is a pandas object before converting anything
(a numpy array or a list alike), and that question imports pandas: 0.14 s on an idle machine,
up to 0.45 s on a loaded one, in every process that converts (the coordinator without a
cluster, each worker on its first partition), for a library the conversion never uses. These
builders make the same arrays (equal to ``pa.array(values, type)``, nulls included) from
buffers instead: fixed-width values and validity bitmaps from numpy, strings as offsets and
UTF-8 bytes, structs and lists from their children. ``pa.scalar()`` asks the same question:
:func:`repeated` stands in for a scalar operand.
"""

from __future__ import annotations

import operator
from itertools import repeat
from typing import Any

import numpy as np
import pyarrow as pa

_ARROW: dict[np.dtype, pa.DataType] = {}  # numpy dtype -> its Arrow type
_NUMPY: dict[int, np.dtype] = {}  # a numeric Arrow type's id -> its numpy dtype


def _bitmap(valid: np.ndarray) -> pa.Buffer:
    return pa.py_buffer(np.packbits(valid.astype(bool, copy=False), bitorder="little"))


def _validity(valid: np.ndarray | None, length: int) -> tuple[pa.Buffer | None, int]:
    """A validity bitmap (None when every value is valid) and the null count."""
    if valid is None:
        return None, 0
    nulls = length - int(np.count_nonzero(valid))
    return (None, 0) if nulls == 0 else (_bitmap(valid), nulls)


def mask(null: np.ndarray) -> pa.BooleanArray:
    """A boolean array (True where ``null``), the ``mask=`` of Arrow's ``from_arrays``."""
    return pa.Array.from_buffers(pa.bool_(), len(null), [None, _bitmap(null)])


def from_numpy(
    values: np.ndarray, type: pa.DataType | None = None, valid: np.ndarray | None = None
) -> pa.Array:
    """``values`` (1-D, numeric or bool) as ``type`` (their own type when None), null where
    ``valid`` is False. A different ``type`` is reached by Arrow's (safe) cast, as
    ``pa.array(values, type)`` reaches it."""
    values = np.ascontiguousarray(values)
    own = _ARROW.get(values.dtype)
    if own is None:
        own = _ARROW[values.dtype] = pa.from_numpy_dtype(values.dtype)
    n = len(values)
    bitmap, nulls = _validity(valid, n)
    if own == pa.bool_():
        data = _bitmap(values)
    else:
        data = pa.py_buffer(values)
    array = pa.Array.from_buffers(own, n, [bitmap, data], null_count=nulls)
    return array if type is None or type == own else array.cast(type)


def repeated(value: int | float, length: int, type: pa.DataType) -> pa.Array:
    """``value`` ``length`` times as ``type``: the other operand of a compute function, where
    a ``pa.scalar`` would import pandas."""
    return from_numpy(np.full(length, value, dtype=type.to_pandas_dtype()), type)


def _null(values: list) -> np.ndarray | None:
    """Where ``values`` holds None; None when nowhere."""
    null = np.fromiter(map(operator.is_, values, repeat(None)), bool, len(values))
    return null if null.any() else None


# Each builder first assumes no null (the common case) and finds out cheaply when there is one:
# joining or measuring a None fails, and a float column's None becomes NaN.


def _strings(values: list, type: pa.DataType) -> pa.Array:
    null = None
    try:
        joined = "".join(values)
        texts = values
    except TypeError:
        null = _null(values)
        texts = ["" if v is None else v for v in values]
        joined = "".join(texts)
    if joined.isascii():  # one character, one byte: encoded at once
        data = joined.encode("ascii")
        lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    else:
        encoded = [t.encode() for t in texts]
        data = b"".join(encoded)
        lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
    offsets = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if not pa.types.is_large_string(type):
        offsets = offsets.astype(np.int32)
    bitmap, nulls = _validity(None if null is None else ~null, len(values))
    buffers = [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(type, len(values), buffers, null_count=nulls)


def _numbers(values: list, type: pa.DataType) -> pa.Array:
    dtype = _NUMPY.get(type.id)
    if dtype is None:
        dtype = _NUMPY[type.id] = np.dtype(type.to_pandas_dtype())
    null = None
    if dtype.kind == "f":  # None converts to NaN: only NaNs may be nulls
        data = np.array(values, dtype=dtype)
        nan = np.flatnonzero(np.isnan(data))
        if nan.size and any(values[i] is None for i in nan.tolist()):
            null = _null(values)
    elif dtype.kind == "b":  # None would convert to False
        null = _null(values)
    if dtype.kind != "f":
        try:
            data = np.array(values, dtype=dtype) if null is None else None
        except TypeError:  # an integer column's None
            null = _null(values)
        if null is not None:
            data = np.array([0 if v is None else v for v in values], dtype=dtype)
    elif null is not None:
        data[null] = 0
    return from_numpy(data, type, None if null is None else ~null)


def _structs(values: list, type: pa.StructType) -> pa.Array:
    null = None
    try:
        columns = [[v.get(f.name) for v in values] for f in type]
    except AttributeError:  # a null row (None has no get)
        null = _null(values)
        columns = [[None if v is None else v.get(f.name) for v in values] for f in type]
    children = [from_list(c, f.type) for c, f in zip(columns, type, strict=True)]
    if not children:  # a struct of no fields: only its validity
        null = _null(values)
        bitmap, nulls = _validity(None if null is None else ~null, len(values))
        return pa.Array.from_buffers(type, len(values), [bitmap], null_count=nulls)
    row_mask = None if null is None else mask(null)
    return pa.StructArray.from_arrays(children, fields=list(type), mask=row_mask)


def _lists(values: list, type: pa.DataType) -> pa.Array:
    null = None
    try:
        lengths = np.fromiter(map(len, values), np.int64, len(values))
        flat = [x for v in values for x in v]
    except TypeError:  # a null row (None has no length)
        null = _null(values)
        lengths = np.array([0 if v is None else len(v) for v in values], dtype=np.int64)
        flat = [x for v in values if v is not None for x in v]
    large = pa.types.is_large_list(type)
    offsets = np.zeros(len(values) + 1, dtype=np.int64 if large else np.int32)
    np.cumsum(lengths, out=offsets[1:])
    items = from_list(flat, type.value_type)
    cls = pa.LargeListArray if large else pa.ListArray
    row_mask = None if null is None else mask(null)
    return cls.from_arrays(from_numpy(offsets), items, type=type, mask=row_mask)


def _builder(type: pa.DataType) -> Any:
    if pa.types.is_struct(type):
        return _structs
    if pa.types.is_list(type) or pa.types.is_large_list(type):
        return _lists
    if pa.types.is_string(type) or pa.types.is_large_string(type):
        return _strings
    if pa.types.is_integer(type) or pa.types.is_floating(type) or pa.types.is_boolean(type):
        return _numbers
    if pa.types.is_null(type):
        return lambda values, _: pa.nulls(len(values))
    raise TypeError(f"no buffer builder for Arrow type {type}")


_BUILDERS: dict[int, Any] = {}  # an Arrow type's id -> the builder of its kind


def from_list(values: list[Any], type: pa.DataType) -> pa.Array:
    """A Python list of values (None: null) as ``type``: integers, floats, booleans,
    strings, and structs (dicts; a missing key is null) and lists of them."""
    if values and values[0] is None and values.count(None) == len(values):
        return pa.nulls(len(values), type)  # an optional column left empty, as most are
    build = _BUILDERS.get(type.id)
    if build is None:
        build = _BUILDERS[type.id] = _builder(type)
    return build(values, type)


def to_numpy(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The values of a numeric ``array`` without nulls, read from its buffer (a view of a
    single array, a copy of a chunked one). ``Array.to_numpy()`` goes through Arrow's pandas
    conversion, which imports pandas; other arrays take that way still."""
    if isinstance(array, pa.ChunkedArray):
        if array.num_chunks == 1:
            return to_numpy(array.chunk(0))
        dtype = np.dtype(array.type.to_pandas_dtype())
        return np.concatenate([to_numpy(c) for c in array.chunks] or [np.zeros(0, dtype)])
    type = array.type
    if array.null_count or not (pa.types.is_integer(type) or pa.types.is_floating(type)):
        return array.to_numpy(zero_copy_only=False)
    dtype = np.dtype(type.to_pandas_dtype())
    data = array.buffers()[1]
    if data is None:
        return np.zeros(0, dtype)
    return np.frombuffer(data, dtype, count=len(array), offset=array.offset * dtype.itemsize)


__all__ = ["from_list", "from_numpy", "mask", "repeated", "to_numpy"]
