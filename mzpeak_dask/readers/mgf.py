"""MGF input through :func:`pyteomics.mgf.read`.

Partitions are byte ranges between ``BEGIN IONS`` lines (found by one scan of the file), so a
worker parses only its own spectra. Spectrum ids follow the PSI "multiple peak list nativeID
format" (``index=N``); the MGF ``TITLE`` is kept as the spectrum title. Global parameters before
the first spectrum are file-level metadata, not repeated on every spectrum.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import vocabulary as V
from ..records import (
    Param,
    PrecursorRecord,
    RunMetadata,
    ScanRecord,
    SignalArray,
    SpectrumRecord,
)
from .base import InputFormat, ItemRange, Survey, input_error, spectrum_error
from .bytesource import ByteSource, read_bytes
from .plain_values import selected_ion, signal_arrays, spectrum_params, user_params

_BEGIN = re.compile(rb"^[ \t]*BEGIN IONS", re.M)
_END = re.compile(rb"^[ \t]*END IONS[^\n]*\n?", re.M)
_HANDLED = {"title", "pepmass", "charge", "rtinseconds", "mslevel"}


def _offsets(path: str, name: str) -> np.ndarray:
    with ByteSource(path) as source:
        starts = list(source.starts(_BEGIN))
        end = source.size
        if starts:
            last_end = _END.search(source.read(starts[-1], source.size))
            if last_end is None:
                raise input_error(
                    name, "the MGF file is truncated (no END IONS after the last BEGIN IONS)"
                )
            end = starts[-1] + last_end.end()
    return np.array([*starts, end], dtype=np.int64)


def _spectrum(info: dict[str, Any], position: int) -> SpectrumRecord:
    p = info.get("params", {})
    level = int(p.get("mslevel", 2))
    params = spectrum_params(level, ms1=level <= 1, centroid=True)
    if "title" in p:
        params.append(Param.term(V.SPECTRUM_TITLE, str(p["title"])))
    params += user_params((k.upper(), v) for k, v in p.items() if k not in _HANDLED)
    scan_params = []
    if p.get("rtinseconds") is not None:
        scan_params.append(Param.term(V.SCAN_START_TIME, float(p["rtinseconds"]), V.UNIT_SECOND))
    return SpectrumRecord(
        position=position,
        id=f"index={position}",
        params=params,
        scans=[ScanRecord(scan_params)],
        precursors=_precursors(p),
        arrays=_arrays(info),
    )


def _precursors(p: dict[str, Any]) -> list[PrecursorRecord]:
    pepmass = p.get("pepmass")
    if not pepmass or pepmass[0] is None:
        return []
    mz, intensity = pepmass[0], pepmass[1] if len(pepmass) > 1 else None
    charges = [int(c) for c in (p.get("charge") or [])]
    ion = selected_ion(mz, charges[0] if charges else None, intensity, charges[1:])
    return [PrecursorRecord(selected_ions=[ion])]


def _arrays(info: dict[str, Any]) -> list[SignalArray]:
    out = signal_arrays(info["m/z array"], info["intensity array"])
    charges = info.get("charge array")
    if charges is not None and np.ma.count(charges):
        out.append(
            SignalArray(
                V.CHARGE_ARRAY, "charge array", None, np.ma.filled(charges, 0).astype(np.int64)
            )
        )
    return out


def _run_metadata(path: str, header: bytes) -> RunMetadata:
    meta = RunMetadata()
    meta.file_description["contents"] = [Param.term(V.MSN_SPECTRUM).to_json()]
    params = []
    for line in header.decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and not line.lstrip().startswith(("#", ";", "!", "/")):
            params.append(Param(key.strip(), None, value.strip()).to_json())
    meta.run = {"id": os.path.basename(path), "parameters": params}
    return meta


class MGFFormat(InputFormat):
    name = "MGF"
    file_format = Param.term(V.MGF_FORMAT)
    native_id_format = Param.term(V.MULTIPLE_PEAK_LIST_NATIVE_ID)

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        return _BEGIN.search(head) is not None and not head.lstrip().startswith(b"<")

    @classmethod
    def survey(cls, path: str, name: str | None = None) -> Survey:
        offsets = _offsets(path, name or path)
        with ByteSource(path) as source:
            header = source.read(0, int(offsets[0]))
        return Survey(len(offsets) - 1, 0, _run_metadata(path, header), spectrum_offsets=offsets)

    @classmethod
    def read(
        cls, path: str, items: ItemRange, hints: dict[str, object], name: str | None = None
    ) -> Iterator[SpectrumRecord]:
        from pyteomics import mgf  # imported when an MGF input is read (half a second)
        from pyteomics.auxiliary import PyteomicsError

        raw = read_bytes(path, items.byte_start, items.byte_stop)
        text = io.StringIO(raw.decode("utf-8", "replace"))
        del raw
        position = items.start
        try:
            for info in mgf.read(
                text, use_header=False, use_index=False, convert_arrays=2, read_charges=True
            ):
                yield _spectrum(info, position)
                position += 1
        except (PyteomicsError, ValueError, IndexError) as exc:
            raise spectrum_error(
                name or path, f"spectrum index={position}", f"malformed MGF ({exc})"
            ) from None
        finally:
            text.close()  # pyteomics' reader sits in cycles: free the text now, not at a full gc
