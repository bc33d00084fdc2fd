"""Inputs written on the fly (nothing large is committed): hostile ones for the batch tests,
and a run whose UV spectra are few and far between, which a plan's sample (its first spectra
and a few spread over the run) can miss."""

from __future__ import annotations

import base64
import zlib
from pathlib import Path

import numpy as np

_HEAD = """<?xml version="1.0" encoding="utf-8"?>
<mzML xmlns="http://psi.hupo.org/ms/mzml" version="1.1.0">
  <cvList count="1"><cv id="MS" fullName="PSI-MS" URI="https://purl.obolibrary.org/obo/ms.obo"/></cvList>
  <fileDescription><fileContent><cvParam cvRef="MS" accession="MS:1000579" name="MS1 spectrum" value=""/></fileContent></fileDescription>
  <softwareList count="1"><software id="gen" version="1"><cvParam cvRef="MS" accession="MS:1000799" name="custom unreleased software tool" value="test"/></software></softwareList>
  <instrumentConfigurationList count="1"><instrumentConfiguration id="IC"><cvParam cvRef="MS" accession="MS:1000031" name="instrument model" value=""/></instrumentConfiguration></instrumentConfigurationList>
  <dataProcessingList count="1"><dataProcessing id="dp"><processingMethod order="0" softwareRef="gen"><cvParam cvRef="MS" accession="MS:1000544" name="Conversion to mzML" value=""/></processingMethod></dataProcessing></dataProcessingList>
  <run id="run" defaultInstrumentConfigurationRef="IC">
    <spectrumList count="1" defaultDataProcessingRef="dp">
      <spectrum index="0" id="scan=1" defaultArrayLength="{n}">
        <cvParam cvRef="MS" accession="MS:1000511" name="ms level" value="1"/>
        <cvParam cvRef="MS" accession="MS:1000127" name="centroid spectrum" value=""/>
        <binaryDataArrayList count="2">
"""
_ARRAY = """          <binaryDataArray encodedLength="{length}">
            <cvParam cvRef="MS" accession="MS:1000523" name="64-bit float" value=""/>
            <cvParam cvRef="MS" accession="MS:1000574" name="zlib compression" value=""/>
            <cvParam cvRef="MS" accession="{accession}" name="{name}" value=""/>
            <binary>{data}</binary>
          </binaryDataArray>
"""
_TAIL = """        </binaryDataArrayList>
      </spectrum>
    </spectrumList>
  </run>
</mzML>
"""


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
        _ARRAY.format(length=len(data), accession=a, name=n, data=data)
        for a, n in (("MS:1000514", "m/z array"), ("MS:1000515", "intensity array"))
    )
    path.write_text(_HEAD.format(n=points if declared is None else declared) + arrays + _TAIL)
    return path


_UV_HEAD = """<?xml version="1.0" encoding="utf-8"?>
<mzML xmlns="http://psi.hupo.org/ms/mzml" version="1.1.0">
  <cvList count="2"><cv id="MS" fullName="PSI-MS" URI="https://purl.obolibrary.org/obo/ms.obo"/><cv id="UO" fullName="Unit Ontology" URI="https://purl.obolibrary.org/obo/uo.obo"/></cvList>
  <fileDescription><fileContent><cvParam cvRef="MS" accession="MS:1000579" name="MS1 spectrum" value=""/><cvParam cvRef="MS" accession="MS:1000804" name="electromagnetic radiation spectrum" value=""/></fileContent></fileDescription>
  <softwareList count="1"><software id="gen" version="1"><cvParam cvRef="MS" accession="MS:1000799" name="custom unreleased software tool" value="test"/></software></softwareList>
  <instrumentConfigurationList count="1"><instrumentConfiguration id="IC"><cvParam cvRef="MS" accession="MS:1000031" name="instrument model" value=""/></instrumentConfiguration></instrumentConfigurationList>
  <dataProcessingList count="1"><dataProcessing id="dp"><processingMethod order="0" softwareRef="gen"><cvParam cvRef="MS" accession="MS:1000544" name="Conversion to mzML" value=""/></processingMethod></dataProcessing></dataProcessingList>
  <run id="run" defaultInstrumentConfigurationRef="IC">
    <spectrumList count="{count}" defaultDataProcessingRef="dp">
"""
_UV_ARRAY = """          <binaryDataArray encodedLength="{length}">
            <cvParam cvRef="MS" accession="MS:1000523" name="64-bit float" value=""/>
            <cvParam cvRef="MS" accession="MS:1000576" name="no compression" value=""/>
            {kind}
            <binary>{data}</binary>
          </binaryDataArray>
"""
_MZ = '<cvParam cvRef="MS" accession="MS:1000514" name="m/z array" value="" unitCvRef="MS" unitAccession="MS:1000040" unitName="m/z"/>'
_NM = '<cvParam cvRef="MS" accession="MS:1000617" name="wavelength array" value="" unitCvRef="UO" unitAccession="UO:0000018" unitName="nanometer"/>'
_IT = '<cvParam cvRef="MS" accession="MS:1000515" name="intensity array" value="" unitCvRef="MS" unitAccession="MS:1000131" unitName="number of detector counts"/>'


def sparse_uv_mzml(path: Path, spectra: int, uv_at: set[int]) -> Path:
    """A run of ``spectra`` centroid MS1 spectra, those at ``uv_at`` UV spectra instead (a
    wavelength array and no m/z array), uncompressed and not indexed."""
    rng = np.random.default_rng(7)
    out = [_UV_HEAD.format(count=spectra)]
    for i in range(spectra):
        uv = i in uv_at
        axis = np.linspace(190.0, 400.0, 50) if uv else np.sort(rng.uniform(100, 1500, 40))
        inten = rng.uniform(1, 1000, len(axis)).round(2)
        head = (
            '<cvParam cvRef="MS" accession="MS:1000804" name="electromagnetic radiation spectrum" value=""/>'
            if uv
            else '<cvParam cvRef="MS" accession="MS:1000579" name="MS1 spectrum" value=""/><cvParam cvRef="MS" accession="MS:1000511" name="ms level" value="1"/><cvParam cvRef="MS" accession="MS:1000127" name="centroid spectrum" value=""/>'
        )
        arrays = ""
        for values, kind in ((axis, _NM if uv else _MZ), (inten, _IT)):
            data = base64.b64encode(values.astype("<f8").tobytes()).decode()
            arrays += _UV_ARRAY.format(length=len(data), kind=kind, data=data)
        out.append(
            f'      <spectrum index="{i}" id="scan={i + 1}" defaultArrayLength="{len(axis)}">\n        {head}\n        <scanList count="1"><cvParam cvRef="MS" accession="MS:1000795" name="no combination" value=""/><scan><cvParam cvRef="MS" accession="MS:1000016" name="scan start time" value="{i * 0.01:.2f}" unitCvRef="UO" unitAccession="UO:0000031" unitName="minute"/></scan></scanList>\n        <binaryDataArrayList count="2">\n{arrays}        </binaryDataArrayList>\n      </spectrum>\n'
        )
    out.append("    </spectrumList>\n  </run>\n</mzML>\n")
    path.write_text("".join(out))
    return path
