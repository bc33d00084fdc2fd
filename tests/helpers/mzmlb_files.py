"""An mzMLb made by replicating a real one (pwiz's layout): its spectra repeated with new scan
numbers and retention times (as :mod:`.replicate` does for mzML), their signal datasets
repeated beside them (each copy's external offsets moved past the last copy's), the offset
indexes rebuilt; the datasets keep the source's filters and chunks."""

from __future__ import annotations

import re
from pathlib import Path

import h5py
import numpy as np

from .replicate import _parts, _shifted

_ARRAY = re.compile(rb"<binaryDataArray\b.*?</binaryDataArray>", re.S)
_DATASET = re.compile(rb'name="external HDF5 dataset" value="([^"]+)"')
_OFFSET = re.compile(rb'(name="external offset" value=")(\d+)')
_ID = re.compile(rb'<(spectrum|chromatogram)\s[^>]*?\bid="([^"]*)"')


def _moved_arrays(spectrum: bytes, shift: dict[bytes, int]) -> bytes:
    def moved(array: re.Match) -> bytes:
        text = array.group(0)
        found = _DATASET.search(text)
        if found is None:
            return text
        by = shift[found.group(1)]
        return _OFFSET.sub(lambda m: m.group(1) + b"%d" % (int(m.group(2)) + by), text)

    return _ARRAY.sub(moved, spectrum)


def _like(h5: h5py.File, source: h5py.Dataset, name: str, data: np.ndarray) -> None:
    h5.create_dataset(
        name,
        data=data,
        compression=source.compression,
        compression_opts=source.compression_opts,
        shuffle=source.shuffle,
        chunks=(min(source.chunks[0], len(data)),) if source.chunks and len(data) else None,
    )


def replicated_mzmlb(source: Path, target: Path, copies: int) -> int:
    """``copies`` copies of ``source``'s spectra written to ``target``; returns its size."""
    with h5py.File(source, "r") as f:
        head, spectra, tail = _parts(f["mzML"][:].tobytes())
        names = [n for n in f if n.startswith("spectrum_")]
        lengths = {n.encode(): len(f[n]) for n in names}
        scans = [int(n) for n in re.findall(rb"scan=(\d+)", b"".join(spectra))] or [1]
        starts = re.findall(rb'MS:1000016"[^>]*?value="([^"]+)', b"".join(spectra))
        span = max((float(t) for t in starts), default=0.0) + 1.0
        body = []
        for copy in range(copies):
            shift = {name: copy * n for name, n in lengths.items()}
            for spectrum in spectra:
                moved = _shifted(spectrum, copy, max(scans) + 1, copy * len(spectra), copy * span)
                body.append(_moved_arrays(moved, shift))
        head = re.sub(
            rb'(<spectrumList\s[^>]*?count=")\d+',
            lambda m: m.group(1) + b"%d" % (len(spectra) * copies),
            head,
            count=1,
        )
        xml = head + b"\n".join(body) + b"\n" + tail
        with h5py.File(target, "w") as out:
            for key, value in f["mzML"].attrs.items():
                out.attrs[key] = value
            _like(out, f["mzML"], "mzML", np.frombuffer(xml, dtype=np.int8))
            out["mzML"].attrs.update(dict(f["mzML"].attrs))
            for name in names:
                _like(out, f[name], name, np.concatenate([f[name][:]] * copies))
            for name in f:
                if name.startswith("chromatogram_"):
                    _like(out, f[name], name, f[name][:])
            for kind, end in ((b"spectrum", b"</spectrumList>"), (b"chromatogram", None)):
                found = [(m.start(), m.group(2)) for m in _ID.finditer(xml) if m.group(1) == kind]
                stop = xml.find(end or b"</chromatogramList>")
                offsets = np.array([o for o, _ in found] + [stop], dtype=np.int64)
                ids = b"".join(i + b"\x00" for _, i in found)
                index = f"mzML_{kind.decode()}Index"
                _like(out, f[index], index, offsets)
                _like(out, f[index + "_idRef"], index + "_idRef", np.frombuffer(ids, np.int8))
    return target.stat().st_size
