"""Many runs at no cost in disk: names of one archive (hard links), each a run of its own to
the analysis, for the tests and benchmarks of analyses over a repository."""

from __future__ import annotations

import os
from pathlib import Path


def replicated_archive(source: Path, root: Path, copies: int) -> Path:
    """``source`` (an mzML) replicated ``copies`` times into ``root`` and converted there in
    this process, with the defaults."""
    from mzpeak_dask import ConvertOptions, convert

    from ..conftest import INLINE
    from .replicate import replicate

    stem = f"{source.name.split('.')[0]}_x{copies}"
    mzml = root / f"{stem}.mzML"
    replicate(source, mzml, copies)
    archive = root / f"{stem}.mzpeak"
    convert(mzml, archive, ConvertOptions(), cluster=INLINE)
    return archive


def linked_copies(archive: Path, folder: Path, count: int) -> list[Path]:
    """``count`` names of ``archive`` in ``folder`` (``run00.mzpeak`` ...), those already
    there kept."""
    paths = []
    for k in range(count):
        path = folder / f"run{k:02d}.mzpeak"
        if not path.exists():
            os.link(archive, path)
        paths.append(path)
    return paths
