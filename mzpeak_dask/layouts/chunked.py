"""The chunked layout: one row per chunk of the main axis (format doc sections 2.2, 5.3-5.5).

Each item's main axis is cut into chunks ``chunk_width`` axis units wide (null-aware: a null
never leaves the value it flanks). Per row: ``<axis>_chunk_start`` / ``_chunk_end`` (the real
first and last values), ``<axis>_chunk_values`` encoded per ``chunk_encoding``, and every other
array as a plain list (``chunk_secondary``) or as MS-Numpress bytes (``chunk_transform``).

Encoding choice per row: profile items use the selected encoding, centroid items ``basic``;
a delta chunk that would not round-trip bit for bit falls back to ``basic``; a Numpress chunk of
a single value (which reference readers cannot decode) falls back to ``delta``/``basic``.

:func:`decode` reads any chunk rows back: all at once when they are delta/basic with plain
secondary lists (the common case), else chunk by chunk. The signature is every layout's (see
:mod:`mzpeak_dask.layouts`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..codecs import basic, delta, numpress
from ..errors import ArchiveError, NumpressEncodeError
from ..format import vocabulary as V
from ..options import ConvertOptions
from ..support.arrow_build import from_list
from ..transforms.chunking import chunk_bounds
from ..transforms.null_marking import fill_nulls
from .array_index import ArrayIndexEntry, ArrayView, field_metadata
from .arrow import Pair, concat, flat, list_array, lists
from .chunk_plan import ItemChunks, item_valid, plan_chunks
from .schema import PreparedSignal, SignalColumn, SignalSchema

PREFIX = "chunk"
SORTS_ITEMS = True  # chunks are main-axis ranges: each item is sorted along it
ENCODINGS = {"delta": V.DELTA_ENCODING, "basic": V.NO_COMPRESSION, "numpress": V.NUMPRESS_LINEAR}
INTENSITY_TRANSFORMS = {"slof": V.NUMPRESS_SLOF, "pic": V.NUMPRESS_PIC}
_BYTES = pa.large_list(pa.field("item", pa.uint8(), nullable=False))


def _list_type(column: SignalColumn) -> pa.DataType:
    return pa.large_list(pa.field("item", pa.from_numpy_dtype(np.dtype(column.dtype))))


def _transform_of(column: SignalColumn, options: ConvertOptions) -> str | None:
    if column.array_type == V.INTENSITY_ARRAY and column.primary:
        return INTENSITY_TRANSFORMS.get(options.numpress_intensity or "")
    return None


def _field_names(schema: SignalSchema, options: ConvertOptions) -> list[tuple[str, str]]:
    """``(field name, role)`` in column order."""
    axis = schema.main.name
    fields = [
        (f"{axis}_chunk_start", V.CHUNK_START),
        (f"{axis}_chunk_end", V.CHUNK_END),
        (f"{axis}_chunk_values", V.CHUNK_VALUES),
        ("chunk_encoding", V.CHUNK_ENCODING),
    ]
    for c in schema.columns[1:]:
        transform = _transform_of(c, options)
        if transform is None:
            fields.append((c.name, V.CHUNK_SECONDARY))
        else:
            fields.append((f"{c.name}_{V.TRANSFORM_COLUMN_SUFFIX[transform]}_bytes", transform))
    if options.chunk_encoding == "numpress":
        fields.append((f"{axis}_numpress_linear_bytes", V.NUMPRESS_LINEAR))
    return fields


def struct_type(schema: SignalSchema, options: ConvertOptions) -> pa.StructType:
    main = schema.main
    out = [pa.field(schema.index_column, pa.uint64())]
    by_name = {c.name: c for c in schema.columns}
    for name, role in _field_names(schema, options):
        if role in (V.CHUNK_START, V.CHUNK_END):
            out.append(pa.field(name, pa.float64(), metadata=field_metadata(schema, main, role)))
        elif role == V.CHUNK_VALUES:
            out.append(
                pa.field(
                    name,
                    pa.large_list(pa.field("item", pa.float64())),
                    metadata=field_metadata(schema, main, role),
                )
            )
        elif role == V.CHUNK_ENCODING:
            out.append(pa.field(name, pa.string(), metadata=field_metadata(schema, main, role)))
        elif role == V.CHUNK_SECONDARY:
            c = by_name[name]
            out.append(pa.field(name, _list_type(c), metadata=field_metadata(schema, c, role)))
        else:
            c = main if role == V.NUMPRESS_LINEAR else by_name[name.rsplit("_numpress_", 1)[0]]
            meta = field_metadata(schema, c, V.CHUNK_TRANSFORM, role)
            out.append(pa.field(name, _BYTES, metadata=meta))
    return pa.struct(out)


def array_index(schema: SignalSchema, options: ConvertOptions) -> list[ArrayIndexEntry]:
    main = schema.main
    by_name = {c.name: c for c in schema.columns}
    entries = []
    for name, role in _field_names(schema, options):
        path = f"{PREFIX}.{name}"
        if role in (V.CHUNK_START, V.CHUNK_END, V.CHUNK_VALUES, V.CHUNK_ENCODING):
            entries.append(ArrayIndexEntry.for_column(schema, main, path, role))
        elif role == V.CHUNK_SECONDARY:
            entries.append(ArrayIndexEntry.for_column(schema, by_name[name], path, role))
        else:
            c = main if role == V.NUMPRESS_LINEAR else by_name[name.rsplit("_numpress_", 1)[0]]
            entries.append(ArrayIndexEntry.for_column(schema, c, path, V.CHUNK_TRANSFORM, role))
    return entries


# -- encoding ---------------------------------------------------------------------------------
@dataclass
class _Rows:
    index: list
    start: list
    end: list
    values: list  # per row: (values, valid) or None (numpress rows)
    encoding: list
    numpress: list  # per row: uint8 buffer or None
    secondary: dict  # field -> list of (values, valid)
    transforms: dict  # field -> list of uint8 buffers


def _encode_axis(
    values: np.ndarray, valid: np.ndarray, encoding: str
) -> tuple[str, tuple | None, np.ndarray | None]:
    """One chunk's main axis: (encoding CURIE, (values, valid) or None, numpress bytes)."""
    if encoding == V.NUMPRESS_LINEAR and len(values) > 1:
        try:
            return encoding, None, numpress.encode_linear(np.where(valid, values, 0.0))
        except NumpressEncodeError:  # values Numpress cannot represent: store them exactly
            encoding = V.DELTA_ENCODING
    if encoding in (V.NUMPRESS_LINEAR, V.DELTA_ENCODING) and delta.round_trips(values, valid):
        _, out, out_valid = delta.encode(values, valid)
        return V.DELTA_ENCODING, (out, out_valid), None
    _, out, out_valid = basic.encode(values, valid)
    return V.NO_COMPRESSION, (out, out_valid), None


def _encoding(item: PreparedSignal, options: ConvertOptions) -> str:
    """The main-axis encoding an item's chunks try: the selected one for profile items."""
    return ENCODINGS[options.chunk_encoding] if item.profile else V.NO_COMPRESSION


def _encode_item(
    item: PreparedSignal,
    schema: SignalSchema,
    options: ConvertOptions,
    rows: _Rows,
    fields: list[tuple[str, str]],
    chunks: ItemChunks | None,
) -> None:
    if chunks is None:
        return
    main = item.values[schema.main.name].astype(np.float64, copy=False)
    valid = item_valid(item)
    offsets, starts, ends = chunks.offsets, chunks.starts.copy(), chunks.ends.copy()
    encoding = _encoding(item, options)
    filled_bounds = None
    null_marked: dict[str, bool] = {}
    for c in schema.columns:  # the first column of a name, as a search would find it
        null_marked.setdefault(c.name, c.null_marked)
    if encoding == V.NUMPRESS_LINEAR and item.valid is not None:
        # Numpress has no nulls: store the reconstructed positions (as the reference does), so
        # the predictor sees a smooth axis; the intensity there stays 0. Such a chunk's bounds
        # are then its first and last stored (reconstructed) values.
        main = fill_nulls(main, valid, np.asarray(item.model) if item.model else None)
        filled_bounds = chunk_bounds(main, np.ones(len(main), bool), offsets)
    for k in range(len(offsets) - 1):
        a, b = int(offsets[k]), int(offsets[k + 1])
        if chunks.axis is not None:  # encoded with every other chunk of the partition
            (curie, stored), packed = chunks.axis[k], None
        else:
            chunk_valid = valid[a:b] if encoding != V.NUMPRESS_LINEAR else np.ones(b - a, bool)
            curie, stored, packed = _encode_axis(main[a:b], chunk_valid, encoding)
        if packed is None and encoding == V.NUMPRESS_LINEAR:  # a one-point fallback chunk
            curie, stored, packed = _encode_axis(main[a:b], valid[a:b], V.DELTA_ENCODING)
        elif packed is not None and filled_bounds is not None:
            starts[k], ends[k] = filled_bounds[0][k], filled_bounds[1][k]
        rows.index.append(item.index)
        rows.start.append(starts[k])
        rows.end.append(ends[k])
        rows.encoding.append(curie)
        rows.values.append(stored)
        rows.numpress.append(packed)
        for name, role in fields[4:]:
            if role == V.NUMPRESS_LINEAR:
                continue
            column = name if role == V.CHUNK_SECONDARY else name.rsplit("_numpress_", 1)[0]
            values = item.values.get(column)
            part = None if values is None else values[a:b]
            if role == V.CHUNK_SECONDARY:
                part_valid = valid[a:b] if null_marked[column] else None
                rows.secondary[name].append(None if part is None else (part, part_valid))
            else:
                encoded = (
                    None
                    if part is None
                    else numpress.ENCODERS[role](np.where(valid[a:b], part, 0).astype(np.float64))
                )
                rows.transforms[name].append(encoded)


def encode(schema: SignalSchema, items: list[PreparedSignal], options: ConvertOptions) -> pa.Table:
    fields = _field_names(schema, options)
    rows = _Rows(
        [],
        [],
        [],
        [],
        [],
        [],
        {n: [] for n, r in fields if r == V.CHUNK_SECONDARY},
        {n: [] for n, r in fields[4:] if r not in (V.CHUNK_SECONDARY, V.NUMPRESS_LINEAR)},
    )
    encodings = [_encoding(item, options) for item in items]
    for item, chunks in zip(items, plan_chunks(schema, items, options, encodings), strict=True):
        _encode_item(item, schema, options, rows, fields, chunks)
    stype = struct_type(schema, options)
    children = {schema.index_column: from_list(rows.index, pa.uint64())}
    axis = schema.main.name
    children[f"{axis}_chunk_start"] = from_list(rows.start, pa.float64())
    children[f"{axis}_chunk_end"] = from_list(rows.end, pa.float64())
    children[f"{axis}_chunk_values"] = list_array(
        rows.values, stype.field(f"{axis}_chunk_values").type
    )
    children["chunk_encoding"] = from_list(rows.encoding, pa.string())
    for name, parts in rows.secondary.items():
        children[name] = list_array(parts, stype.field(name).type)
    for name, buffers in rows.transforms.items():
        children[name] = list_array([None if b is None else (b, None) for b in buffers], _BYTES)
    if options.chunk_encoding == "numpress":
        name = f"{axis}_numpress_linear_bytes"
        children[name] = list_array(
            [None if b is None else (b, None) for b in rows.numpress], _BYTES
        )
    struct = pa.StructArray.from_arrays([children[f.name] for f in stype], fields=list(stype))
    return pa.table({PREFIX: struct})


def row_weights(table: pa.Table) -> np.ndarray:
    """Points per chunk row: the length of the first secondary list (or of the main values)."""
    struct = table.column(PREFIX)
    names = [f.name for f in struct.type]
    secondary = next((n for n in names[5:] if not n.endswith("_bytes")), None)
    column = pc.struct_field(struct, secondary or names[3])
    lengths = pc.fill_null(pc.list_value_length(column), 1).to_numpy()
    return lengths.astype(np.int64) + (0 if secondary else 1)


# -- decoding ---------------------------------------------------------------------------------
def decode_axis(
    start: float,
    encoding: str,
    values: np.ndarray | None,
    valid: np.ndarray | None,
    packed: np.ndarray | None,
    size: int,
) -> tuple[np.ndarray, np.ndarray]:
    """One chunk's main axis back to ``(values, valid)`` of length ``size``."""
    if encoding == V.NUMPRESS_LINEAR:
        if packed is None:
            raise ArchiveError("a Numpress chunk without its byte column")
        decoded = numpress.decode_linear(packed)
        return decoded, decoded != 0.0
    values = np.zeros(0) if values is None else values
    valid = np.ones(len(values), bool) if valid is None else valid
    if encoding == V.DELTA_ENCODING:
        return delta.decode(start, values, valid, size=size)
    if encoding in (V.NO_COMPRESSION, None):
        return basic.decode(start, values, valid, size=size)
    raise ArchiveError(f"unsupported chunk encoding {encoding}")


def decode(
    rows: pa.StructArray, views: list[ArrayView], where: str = ""
) -> tuple[dict[int, Pair], np.ndarray]:
    """Chunk rows (of any items) -> per array view ``k``, ``(values, valid)`` over all the
    rows' points, and the points of each row. ``where`` names the member in errors."""
    fast = _decode_plain_chunks(rows, views)
    if fast is not None:
        return fast
    main = views[0].columns
    starts = rows.field(main[V.CHUNK_START].column).to_numpy(zero_copy_only=False)
    encodings = rows.field(main[V.CHUNK_ENCODING].column).to_pylist()
    main_values = lists(rows.field(main[V.CHUNK_VALUES].column))
    packed_main = (
        lists(rows.field(main[V.CHUNK_TRANSFORM].column))
        if V.CHUNK_TRANSFORM in main
        else [None] * len(rows)
    )
    secondary = {k: _secondary(rows, v, where) for k, v in enumerate(views) if k > 0}
    sizes = _chunk_sizes(secondary, len(rows))
    parts = defaultdict(list)
    for c in range(len(rows)):
        values, valid = main_values[c] or (None, None)
        packed = packed_main[c][0] if packed_main[c] else None
        parts[0].append(decode_axis(starts[c], encodings[c], values, valid, packed, sizes[c]))
        for k, chunks in secondary.items():
            parts[k].append(
                chunks[c]
                if chunks[c] is not None
                else (np.zeros(sizes[c], views[k].dtype), np.zeros(sizes[c], bool))
            )
    raw = {k: concat(v) for k, v in parts.items()}
    sizes_out = np.array([len(p[0]) for p in parts[0]], dtype=np.int64)
    stored = np.array([0 if v is None else len(v[0]) for v in main_values], dtype=np.int64)
    is_basic = np.array([e in (V.NO_COMPRESSION, None) for e in encodings], dtype=bool)
    return _null_heads(raw, views, sizes_out, is_basic & (sizes_out == stored + 1)), sizes_out


def _decode_plain_chunks(
    rows: pa.StructArray, views: list[ArrayView]
) -> tuple[dict[int, Pair], np.ndarray] | None:
    """All chunks at once when they are delta/basic and every other array is a plain list
    present in every row (the common case); None otherwise (decode chunk by chunk)."""
    main = views[0].columns
    if V.CHUNK_TRANSFORM in main:
        return None
    encodings = rows.field(main[V.CHUNK_ENCODING].column)
    is_delta = pc.equal(encodings, V.DELTA_ENCODING).to_numpy(zero_copy_only=False)
    is_basic = pc.equal(encodings, V.NO_COMPRESSION).to_numpy(zero_copy_only=False)
    if not np.all(is_delta | is_basic):
        return None
    plain = {}
    for k, view in enumerate(views[1:], start=1):
        entry = view.columns.get(V.CHUNK_SECONDARY)
        column = rows.field(entry.column) if entry is not None else None
        if column is None or column.null_count:
            return None
        plain[k] = flat(column)
    if not plain:
        return None
    sizes = np.diff(next(iter(plain.values()))[2])
    if any(not np.array_equal(np.diff(v[2]), sizes) for v in plain.values()):
        return None
    values, valid, offsets = flat(rows.field(main[V.CHUNK_VALUES].column))
    starts = rows.field(main[V.CHUNK_START].column).to_numpy(zero_copy_only=False)
    decoded = delta.decode_chunks(
        starts,
        sizes,
        is_delta,
        values.astype(np.float64),
        np.ones(len(values), bool) if valid is None else valid,
        offsets,
    )
    if decoded is None:
        return None
    raw = {0: decoded}
    raw.update({k: (v[0], v[1]) for k, v in plain.items()})
    return _null_heads(raw, views, sizes, is_basic & (sizes == np.diff(offsets) + 1)), sizes


def _null_heads(
    raw: dict[int, Pair], views: list[ArrayView], sizes: np.ndarray, headed: np.ndarray
) -> dict[int, Pair]:
    """``raw`` with the m/z of every basic chunk's decoded head (``headed``: the chunks whose
    start was put before their values) made null where a null-marked array is null there: the
    head was the second null of a null pair, which the basic rule stores as ``start``; it is
    rebuilt as every null-marked point is (format document §5.2, §5.4)."""
    marked = [raw[k][1] for k, v in enumerate(views) if k and v.null_marked and k in raw]
    marked = [valid for valid in marked if valid is not None]
    if not marked or not headed.any():
        return raw
    heads = (np.cumsum(sizes) - sizes)[headed]
    values, ok = raw[0]
    ok = np.ones(len(values), bool) if ok is None else ok.copy()
    for valid in marked:
        ok[heads] &= valid[heads]
    raw[0] = (values, ok)
    return raw


def _secondary(rows: pa.StructArray, view: ArrayView, where: str) -> list[Pair | None]:
    """Per row, one secondary array: a plain list, or a Numpress transform decoded."""
    if V.CHUNK_SECONDARY in view.columns:
        return lists(rows.field(view.columns[V.CHUNK_SECONDARY].column))
    entry = view.columns.get(V.CHUNK_TRANSFORM)
    if entry is None:
        return [None] * len(rows)
    decoder = numpress.DECODERS.get(entry.transform or "")
    if decoder is None:
        raise ArchiveError(f"{where}: unsupported transform {entry.transform}")
    return [
        None if item is None else (decoder(item[0]), None)
        for item in lists(rows.field(entry.column))
    ]


def _chunk_sizes(secondary: dict[int, list], rows: int) -> list[int | None]:
    """Per row, the length of its first secondary array present (None: none is)."""
    return [
        next((len(chunks[c][0]) for chunks in secondary.values() if chunks[c] is not None), None)
        for c in range(rows)
    ]
