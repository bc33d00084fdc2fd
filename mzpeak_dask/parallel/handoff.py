"""A partition's written parts, kept in a file of its run's staging folder until the finishing
task stitches them: pickle protocol 5, buffers out of band and 64-byte aligned, loaded through
a memory map. A worker that sees the staging folder writes the file and passes on its path
only; otherwise the parts come to the coordinator, which files them."""

from __future__ import annotations

import os
import pickle
import struct
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa

_MAGIC = b"MZPKHOF1"
_ALIGN = 64


def _pad(n: int) -> int:
    return (-n) % _ALIGN


def dump(obj: Any, folder: str) -> str:
    """Write ``obj`` to a new file in ``folder``; returns its path."""
    buffers: list[pickle.PickleBuffer] = []
    meta = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    views = [b.raw() for b in buffers]
    path = os.path.join(folder, f"part-{uuid.uuid4().hex}.pkl5")
    header = struct.pack("<8sQQ", _MAGIC, len(meta), len(views))
    sizes = struct.pack(f"<{len(views)}Q", *(v.nbytes for v in views))
    with open(path, "wb") as f:
        for chunk in (header, sizes, meta):
            f.write(chunk)
        f.write(b"\0" * _pad(f.tell()))
        for view in views:
            f.write(view)
            f.write(b"\0" * _pad(view.nbytes))
    return path


def load(path: str) -> Any:
    """Rebuild the object written by :func:`dump`; its Arrow buffers map the file."""
    source = pa.memory_map(path)
    data = source.read_buffer()
    magic, meta_size, count = struct.unpack_from("<8sQQ", data, 0)
    if magic != _MAGIC:
        raise ValueError(f"{path}: not a handoff file")
    position = struct.calcsize("<8sQQ")
    sizes = struct.unpack_from(f"<{count}Q", data, position)
    position += 8 * count
    meta = data.slice(position, meta_size).to_pybytes()
    position += meta_size + _pad(position + meta_size)
    buffers = []
    for size in sizes:
        buffers.append(data.slice(position, size))
        position += size + _pad(size)
    return pickle.loads(meta, buffers=buffers)


def visible_to_workers(client: Any, folder: Path, timeout: float) -> bool:
    """Whether every worker sees ``folder`` (probed with a marker file, by a task on each
    worker; no answer within ``timeout`` seconds is a no)."""
    marker = folder / f".probe-{uuid.uuid4().hex}"
    try:
        marker.write_bytes(b"")
    except OSError:  # e.g. a folder this process may not write in: not relied on
        return False
    try:
        workers = list(client.nthreads(callback_timeout=timeout))
        probes = [
            client.submit(os.path.exists, str(marker), workers=[w], pure=False) for w in workers
        ]
        return bool(workers) and all(p.result(timeout=timeout) for p in probes)
    except Exception:  # noqa: BLE001 - any failure means: do not rely on the folder
        return False
    finally:
        marker.unlink(missing_ok=True)
