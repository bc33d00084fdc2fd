"""mzMLb written by psims: its last ``mzML_spectrumIndex`` (and chromatogram index) entry points
at the end of the document, past ``</spectrumList></run></mzML>``, so a spectrum's range must
end at its own closing tag. Converted in every layout and with both mzML parsers, the archive
reads back as pyteomics reads the file."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from psims.mzmlb import MzMLbWriter
from pyteomics import mzml

from mzpeak_dask import ConvertOptions, convert, open_archive

from ..conftest import DATA, INLINE
from ..helpers import oracle
from ..test_roundtrip import check_metadata, check_signal

SOURCE = DATA / "mzdata" / "small.mzML"  # 48 spectra: MS1 profile, MS2 centroid


def psims_mzmlb(target: Path, count: int = 12) -> Path:
    """The first ``count`` spectra of the real run, written as mzMLb by psims."""
    with mzml.MzML(str(SOURCE), use_index=False) as reader:
        spectra = [s for _, s in zip(range(count), reader, strict=False)]
    with MzMLbWriter(str(target), close=True) as out:
        out.controlled_vocabularies()
        out.file_description(["MS1 spectrum", "MSn spectrum"])
        out.software_list([{"id": "psims-writer", "version": "1", "params": ["psims"]}])
        out.instrument_configuration_list([out.InstrumentConfiguration("IC1", [])])
        out.data_processing_list([out.DataProcessing([], id="DP1")])
        with out.run(id="psims_run", instrument_configuration="IC1"):
            with out.spectrum_list(count=len(spectra)):
                for s in spectra:
                    scan = s["scanList"]["scan"][0]
                    precursor = None
                    if s["ms level"] > 1:
                        ion = s["precursorList"]["precursor"][0]["selectedIonList"]
                        precursor = {
                            "mz": ion["selectedIon"][0]["selected ion m/z"],
                            "charge": ion["selectedIon"][0].get("charge state"),
                            "activation": ["collision-induced dissociation"],
                        }
                    out.write_spectrum(
                        s["m/z array"],
                        s["intensity array"],
                        id=s["id"],
                        centroided="centroid spectrum" in s,
                        scan_start_time=scan["scan start time"],
                        params=[{"ms level": s["ms level"]}],
                        precursor_information=precursor,
                    )
            with out.chromatogram_list(count=1):
                times = np.linspace(0.0, 1.0, 20)
                out.write_chromatogram(
                    times, np.arange(20.0), id="TIC", chromatogram_type="total ion current"
                )
    return target


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = psims_mzmlb(tmp_path_factory.mktemp("psims") / "psims.mzMLb")
    with h5py.File(path, "r") as h5:  # the file as the bug needs it: its last entry at the end
        index, document = h5["mzML_spectrumIndex"][:], h5["mzML"][:].tobytes()
    assert document[int(index[-1]) :].strip() in (b"", b"</mzML>")
    return path


@pytest.mark.parametrize("parser", ["lean", "pyteomics"])
@pytest.mark.parametrize("layout", ["point", "chunked"])
def test_psims_mzmlb_converts_whole(
    written: Path, tmp_path: Path, layout: str, parser: str
) -> None:
    expected = oracle.spectra(written, tmp_path)
    chromatograms = oracle.chromatograms(written, tmp_path)
    out = tmp_path / "out.mzpeak"
    options = ConvertOptions(layout=layout, parser=parser, partition_items=5)
    convert(written, out, options, cluster=INLINE)
    with open_archive(out) as archive:
        assert len(archive) == len(expected) == 12
        for k, want in enumerate(expected):
            where = f"{layout}/{parser} spectrum {k}"
            check_metadata(want, archive[k], where)
            check_signal(want["arrays"], archive[k].arrays, where)
        assert archive.chromatogram_count == len(chromatograms) == 1
        got = archive.read_chromatogram(0)
        for name, values in chromatograms[0]["arrays"].items():
            assert np.array_equal(values.astype(np.float64), got.arrays[name].astype(np.float64))
