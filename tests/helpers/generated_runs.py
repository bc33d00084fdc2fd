"""Small mzML runs written on the fly for the interoperability tests: a few centroid MS1
spectra, chromatograms given as arrays (an empty one included), and extra ``userParam``s on a
spectrum and on the run."""

# ruff: noqa: E501  (a verbatim mzML template)
from __future__ import annotations

import base64
from pathlib import Path

import numpy as np

from .batch_inputs import _ARRAY as ARRAY
from .batch_inputs import _IT as INTENSITY
from .batch_inputs import _MZ as MZ
from .batch_inputs import _PLAIN as PLAIN

_HEAD = """<?xml version="1.0" encoding="utf-8"?>
<mzML xmlns="http://psi.hupo.org/ms/mzml" version="1.1.0">
  <cvList count="2"><cv id="MS" fullName="PSI-MS" URI="https://purl.obolibrary.org/obo/ms.obo"/><cv id="UO" fullName="Unit Ontology" URI="https://purl.obolibrary.org/obo/uo.obo"/></cvList>
  <fileDescription><fileContent><cvParam cvRef="MS" accession="MS:1000579" name="MS1 spectrum" value=""/></fileContent></fileDescription>
  <softwareList count="1"><software id="gen" version="1"><cvParam cvRef="MS" accession="MS:1000799" name="custom unreleased software tool" value="test"/></software></softwareList>
  <instrumentConfigurationList count="1"><instrumentConfiguration id="IC"><cvParam cvRef="MS" accession="MS:1000031" name="instrument model" value=""/></instrumentConfiguration></instrumentConfigurationList>
  <dataProcessingList count="1"><dataProcessing id="dp"><processingMethod order="0" softwareRef="gen"><cvParam cvRef="MS" accession="MS:1000544" name="Conversion to mzML" value=""/></processingMethod></dataProcessing></dataProcessingList>
  <run id="run" defaultInstrumentConfigurationRef="IC">
{run_params}    <spectrumList count="{count}" defaultDataProcessingRef="dp">
"""
_SPECTRUM = """      <spectrum index="{index}" id="scan={scan}" defaultArrayLength="{length}">
        <cvParam cvRef="MS" accession="MS:1000579" name="MS1 spectrum" value=""/>
        <cvParam cvRef="MS" accession="MS:1000511" name="ms level" value="1"/>
        <cvParam cvRef="MS" accession="MS:1000127" name="centroid spectrum" value=""/>
{params}        <scanList count="1"><cvParam cvRef="MS" accession="MS:1000795" name="no combination" value=""/><scan><cvParam cvRef="MS" accession="MS:1000016" name="scan start time" value="{minutes:.2f}" unitCvRef="UO" unitAccession="UO:0000031" unitName="minute"/></scan></scanList>
        <binaryDataArrayList count="2">
{arrays}        </binaryDataArrayList>
      </spectrum>
"""
_CHROMATOGRAM = """      <chromatogram index="{index}" id="{id}" defaultArrayLength="{length}">
        <cvParam cvRef="MS" accession="MS:1000235" name="total ion current chromatogram" value=""/>
        <binaryDataArrayList count="2">
{arrays}        </binaryDataArrayList>
      </chromatogram>
"""
_TIME = '<cvParam cvRef="MS" accession="MS:1000595" name="time array" value="" unitCvRef="UO" unitAccession="UO:0000031" unitName="minute"/>'


def _arrays(pairs: list[tuple[np.ndarray, str]]) -> str:
    out = ""
    for values, kind in pairs:
        data = base64.b64encode(np.asarray(values, "<f8").tobytes()).decode()
        out += ARRAY.format(length=len(data), compression=PLAIN, kind=kind, data=data)
    return out


def user_params(params: list[tuple[str, str, str]], indent: str) -> str:
    """``userParam`` lines from ``(name, type, value)``."""
    return "".join(
        f'{indent}<userParam name="{name}" type="{kind}" value="{value}"/>\n'
        for name, kind, value in params
    )


def generated_mzml(
    path: Path,
    spectra: int = 3,
    chromatograms: list[np.ndarray] | None = None,
    spectrum_params: list[tuple[str, str, str]] = (),
    run_params: list[tuple[str, str, str]] = (),
) -> Path:
    """A run of ``spectra`` centroid MS1 spectra (20 points each), then one TIC-typed
    chromatogram per entry of ``chromatograms`` (its times; intensities are made up, an empty
    array gives a chromatogram with no points). ``spectrum_params`` go on the first spectrum,
    ``run_params`` on the run, as ``userParam``s."""
    rng = np.random.default_rng(11)
    out = [_HEAD.format(count=spectra, run_params=user_params(list(run_params), "    "))]
    for i in range(spectra):
        mz = np.sort(rng.uniform(100, 1500, 20)).round(4)
        intensity = rng.uniform(1, 1000, 20).round(2)
        out.append(
            _SPECTRUM.format(
                index=i,
                scan=i + 1,
                length=len(mz),
                minutes=i * 0.1,
                params=user_params(list(spectrum_params), "        ") if i == 0 else "",
                arrays=_arrays([(mz, MZ), (intensity, INTENSITY)]),
            )
        )
    out.append("    </spectrumList>\n")
    chromatograms = chromatograms or []
    if chromatograms:
        out.append(
            f'    <chromatogramList count="{len(chromatograms)}" defaultDataProcessingRef="dp">\n'
        )
        for k, times in enumerate(chromatograms):
            times = np.asarray(times, np.float64)
            intensity = np.arange(len(times), dtype=np.float64) * 10.0 + 1.0
            out.append(
                _CHROMATOGRAM.format(
                    index=k,
                    id="TIC" if k == 0 else f"chrom{k}",
                    length=len(times),
                    arrays=_arrays([(times, _TIME), (intensity, INTENSITY)]),
                )
            )
        out.append("    </chromatogramList>\n")
    out.append("  </run>\n</mzML>\n")
    path.write_text("".join(out))
    return path
