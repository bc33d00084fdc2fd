"""mzMLb input: an HDF5 file holding the mzML document as a byte dataset (``mzML``), its
offset indexes (``mzML_spectrumIndex``, ``mzML_chromatogramIndex``, n+1 entries) and the
signal arrays as separate datasets that binaryDataArrays reference by name, offset and length.

The XML is handled exactly like mzML (same byte-range documents, same pyteomics parser); only
the array payloads come from HDF5 instead of base64 text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from ..format import vocabulary as V
from ..model.records import ChromatogramRecord, Param, SpectrumRecord
from ..storage.filecache import per_file
from ..storage.inputs import range_file, remote_input
from .base import CHROMATOGRAMS, SPECTRA, InputFormat, ItemRange, Survey, input_error
from .bytesource import ByteSource
from .detect import HDF5_MAGIC
from .mzml import MzMLFormat, parser, range_document

if TYPE_CHECKING:
    import h5py

_INDEX = {SPECTRA: "mzML_spectrumIndex", CHROMATOGRAMS: "mzML_chromatogramIndex"}


def _open(path: str, name: str | None = None) -> h5py.File:
    """The HDF5 file at ``path`` (``name``: what errors call it); an input read by ranges is
    opened over its object, so HDF5 reads its structure and each partition the chunks it
    needs by ranged GETs."""
    import h5py  # only mzMLb inputs pay for importing it (a tenth of the command's imports)
    import hdf5plugin  # noqa: F401  registers Blosc, Zstd, LZ4, ... with this process's HDF5

    # Every process that reads an mzMLb dataset (the command's, each Dask worker's) opens the
    # file here first, so the filters are registered wherever h5py reads a dataset; without
    # them a Blosc-compressed array fails with "can't open directory ...plugin".

    url = remote_input(path)
    try:
        return h5py.File(range_file(url) if url else path, "r")
    except OSError as exc:
        raise input_error(name or url or path, f"cannot open as HDF5 ({exc})") from None


@per_file(4)
def _file(path: str) -> h5py.File:
    """One open HDF5 handle per worker process and input (h5py handles are not picklable)."""
    return _open(path)


class MzMLbFormat(InputFormat):
    name = "mzMLb"
    file_format = Param("mzMLb format", V.MZMLB_FORMAT)

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        return head.startswith(HDF5_MAGIC)

    @classmethod
    def survey(cls, path: str, name: str | None = None) -> Survey:
        name = name or path
        h5 = _open(path, name)
        try:
            if "mzML" not in h5:
                raise input_error(name, "HDF5 file without an 'mzML' dataset is not mzMLb")
            text = h5["mzML"][:].tobytes()
            survey = MzMLFormat.survey_source(name, ByteSource(data=text))
            for kind in (SPECTRA, CHROMATOGRAMS):
                if _INDEX[kind] in h5:
                    offsets = np.asarray(h5[_INDEX[kind]][:], dtype=np.int64)
                    if len(offsets) == survey.count(kind) + 1:
                        if kind == SPECTRA:
                            survey.spectrum_offsets = offsets
                        else:
                            survey.chromatogram_offsets = offsets
            return survey
        finally:
            h5.close()

    @classmethod
    def read(
        cls, path: str, items: ItemRange, hints: dict[str, object], name: str | None = None
    ) -> Iterator[SpectrumRecord | ChromatogramRecord]:
        h5 = _file(path)
        text = h5["mzML"]
        prefix = text[: int(hints["header_stop"])].tobytes()
        document = range_document(prefix, items, lambda a, b: text[a:b].tobytes())

        # each dataset opened once a partition: HDF5 keeps its chunk cache with the opened
        # dataset, so one opened per array read inflated a whole chunk for every spectrum (33
        # times the input's bytes read; tests/readers/test_bytes_read.py)
        opened: dict[str, h5py.Dataset] = {}

        def fetch(dataset: str, offset: int, length: int) -> np.ndarray:
            found = opened.get(dataset)
            if found is None:
                if dataset not in h5:
                    raise ValueError(f"external dataset {dataset!r} is missing")
                found = opened[dataset] = h5[dataset]
            return np.asarray(found[offset : offset + length])

        yield from parser(hints)(document, items.kind, items.start, name or path, fetch)
