"""Damaging the Zarr stores the export writes, on purpose: one object (a chunk or a
``zarr.json``) of a run replaced, cut, edited or removed, in a run folder or inside a
single-file run (a ZIP store, rewritten member by member), and Zstandard bombs: small frames
that inflate far past the size their array declares."""

from __future__ import annotations

import json
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import zstandard

Edit = Callable[[bytes], bytes] | None  # None removes the object


def bomb(size: int, declare: bool) -> bytes:
    """A Zstandard frame of ``size`` zero bytes (a few kB), built without holding them; its
    header gives the content size when ``declare``, else none."""
    if declare:
        compressor = zstandard.ZstdCompressor(level=3).compressobj(size=size)
    else:
        compressor = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
    block, parts, left = bytes(1 << 20), [], size
    while left:
        parts.append(compressor.compress(block[: min(left, len(block))]))
        left -= min(left, len(block))
    parts.append(compressor.flush())
    return b"".join(parts)


def edit_json(change: Callable[[dict], None]) -> Callable[[bytes], bytes]:
    """An edit of a ``zarr.json``: ``change`` alters the parsed document in place."""

    def edit(raw: bytes) -> bytes:
        document = json.loads(raw)
        change(document)
        return json.dumps(document).encode()

    return edit


def damage_folder(run: Path, out: Path, key: str, edit: Edit) -> Path:
    """A copy ``out`` of the run folder ``run`` with object ``key`` edited (or removed)."""
    shutil.copytree(run, out)
    target = out / key
    if edit is None:
        target.unlink()
    else:
        target.write_bytes(edit(target.read_bytes()))
    return out


def damage_zip(run: Path, out: Path, key: str, edit: Edit) -> Path:
    """A copy ``out`` of the single-file run ``run`` with member ``key`` edited (or left
    out); the other members are copied as they are."""
    with zipfile.ZipFile(run) as source, zipfile.ZipFile(out, "w") as target:
        found = False
        for info in source.infolist():
            data = source.read(info)
            if info.filename == key:
                found = True
                if edit is None:
                    continue
                data = edit(data)
            target.writestr(info, data)
    assert found, f"{run}: no member {key}"
    return out
