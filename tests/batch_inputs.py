"""Hostile inputs for the batch tests, written on the fly (nothing large is committed)."""

from __future__ import annotations

import base64
import zlib
from pathlib import Path

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
