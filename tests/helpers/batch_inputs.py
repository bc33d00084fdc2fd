"""Inputs written on the fly (nothing large is committed): hostile ones for the batch tests,
and a run whose UV spectra are few and far between, which a plan's sample (its first spectra
and a few spread over the run) can miss."""

from __future__ import annotations

import base64
import zlib
from pathlib import Path

import numpy as np

# a document's head up to its spectra, and its end after them
_HEAD = """<?xml version="1.0" encoding="utf-8"?>
<mzML xmlns="http://psi.hupo.org/ms/mzml" version="1.1.0">
  <cvList count="2"><cv id="MS" fullName="PSI-MS" URI="https://purl.obolibrary.org/obo/ms.obo"/><cv id="UO" fullName="Unit Ontology" URI="https://purl.obolibrary.org/obo/uo.obo"/></cvList>
  <fileDescription><fileContent>{content}</fileContent></fileDescription>
  <softwareList count="1"><software id="gen" version="1"><cvParam cvRef="MS" accession="MS:1000799" name="custom unreleased software tool" value="test"/></software></softwareList>
  <instrumentConfigurationList count="1"><instrumentConfiguration id="IC"><cvParam cvRef="MS" accession="MS:1000031" name="instrument model" value=""/></instrumentConfiguration></instrumentConfigurationList>
  <dataProcessingList count="1"><dataProcessing id="dp"><processingMethod order="0" softwareRef="gen"><cvParam cvRef="MS" accession="MS:1000544" name="Conversion to mzML" value=""/></processingMethod></dataProcessing></dataProcessingList>
  <run id="run" defaultInstrumentConfigurationRef="IC">
    <spectrumList count="{count}" defaultDataProcessingRef="dp">
"""
_TAIL = """    </spectrumList>
  </run>
</mzML>
"""
_SPECTRUM = """      <spectrum index="{index}" id="scan={scan}" defaultArrayLength="{length}">
        {params}
        <binaryDataArrayList count="2">
{arrays}        </binaryDataArrayList>
      </spectrum>
"""
_ARRAY = """          <binaryDataArray encodedLength="{length}">
            <cvParam cvRef="MS" accession="MS:1000523" name="64-bit float" value=""/>
            {compression}
            {kind}
            <binary>{data}</binary>
          </binaryDataArray>
"""
_ZLIB = '<cvParam cvRef="MS" accession="MS:1000574" name="zlib compression" value=""/>'
_PLAIN = '<cvParam cvRef="MS" accession="MS:1000576" name="no compression" value=""/>'
_MZ = '<cvParam cvRef="MS" accession="MS:1000514" name="m/z array" value="" unitCvRef="MS" unitAccession="MS:1000040" unitName="m/z"/>'
_NM = '<cvParam cvRef="MS" accession="MS:1000617" name="wavelength array" value="" unitCvRef="UO" unitAccession="UO:0000018" unitName="nanometer"/>'
_IT = '<cvParam cvRef="MS" accession="MS:1000515" name="intensity array" value="" unitCvRef="MS" unitAccession="MS:1000131" unitName="number of detector counts"/>'
_MS1 = '<cvParam cvRef="MS" accession="MS:1000579" name="MS1 spectrum" value=""/>'
_UV = '<cvParam cvRef="MS" accession="MS:1000804" name="electromagnetic radiation spectrum" value=""/>'
_CENTROID_MS1 = f'{_MS1}<cvParam cvRef="MS" accession="MS:1000511" name="ms level" value="1"/><cvParam cvRef="MS" accession="MS:1000127" name="centroid spectrum" value=""/>'
_SCAN = '<scanList count="1"><cvParam cvRef="MS" accession="MS:1000795" name="no combination" value=""/><scan><cvParam cvRef="MS" accession="MS:1000016" name="scan start time" value="{minutes:.2f}" unitCvRef="UO" unitAccession="UO:0000031" unitName="minute"/></scan></scanList>'


def huge_spectrum_mzml(path: Path, points: int, declared: int | None = None) -> Path:
    """A valid mzML whose single spectrum holds ``points`` zero-valued points: a few MB on
    disk (zlib compresses zeros ~1000:1), ``16 * points`` bytes once decoded. With a smaller
    ``declared`` array length it is a zip bomb instead."""
    compressor = zlib.compressobj(9)
    block = b"\0" * (1 << 24)
    remaining = points * 8
    parts = []
    while remaining:
        size = min(remaining, len(block))
        parts.append(compressor.compress(block[:size]))
        remaining -= size
    parts.append(compressor.flush())
    data = base64.b64encode(b"".join(parts)).decode()
    arrays = "".join(
        _ARRAY.format(length=len(data), compression=_ZLIB, kind=kind, data=data)
        for kind in (_MZ, _IT)
    )
    length = points if declared is None else declared
    spectrum = _SPECTRUM.format(index=0, scan=1, length=length, params=_CENTROID_MS1, arrays=arrays)
    path.write_text(_HEAD.format(content=_MS1, count=1) + spectrum + _TAIL)
    return path


def sparse_uv_mzml(path: Path, spectra: int, uv_at: set[int]) -> Path:
    """A run of ``spectra`` centroid MS1 spectra, those at ``uv_at`` UV spectra instead (a
    wavelength array and no m/z array), uncompressed and not indexed."""
    rng = np.random.default_rng(7)
    out = [_HEAD.format(content=_MS1 + _UV, count=spectra)]
    for i in range(spectra):
        uv = i in uv_at
        axis = np.linspace(190.0, 400.0, 50) if uv else np.sort(rng.uniform(100, 1500, 40))
        intensity = rng.uniform(1, 1000, len(axis)).round(2)
        arrays = ""
        for values, kind in ((axis, _NM if uv else _MZ), (intensity, _IT)):
            data = base64.b64encode(values.astype("<f8").tobytes()).decode()
            arrays += _ARRAY.format(length=len(data), compression=_PLAIN, kind=kind, data=data)
        params = (_UV if uv else _CENTROID_MS1) + _SCAN.format(minutes=i * 0.01)
        out.append(
            _SPECTRUM.format(index=i, scan=i + 1, length=len(axis), params=params, arrays=arrays)
        )
    out.append(_TAIL)
    path.write_text("".join(out))
    return path
