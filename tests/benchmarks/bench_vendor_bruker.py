"""Bruker timsTOF ``.d`` folders: a batch of copies on 2 workers, and the per-spectrum cost of
the reader against timsrust's bare read loop.

    python -m tests.benchmarks.bench_vendor_bruker [--copies 20] [--workers 2]

The batch is ``--copies`` copies of the real diaPASEF sample (vendor/bruker/…diaPasef_10sec.d:
131 frames, 363 spectra, 4.47 M peaks, 11.6 MB) in one repository folder: **synthetic by
replication** (the same run each time). Figures:

* files/hour of ``mzpeak-dask batch REPO OUT --workers N`` (the command's wall time);
* per spectrum, in one process on one thread: the reader (``BrukerTDFFormat.read``, every
  spectrum with its m/z, intensity and 1/K0 arrays) against timsrust's bare loop (each frame
  read, its TOF indices converted to m/z, its intensities taken, its scans converted to
  1/K0), and their ratio (goal <= 1.5);
* peak RSS of the reader over the first half of the frames and over all of them (flat memory:
  the two should be close).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SAMPLE = (
    Path(__file__).resolve().parents[3]
    / "shared/data/vendor/bruker/230711_idleflow_400-1000mz_25mz_diaPasef_10sec.d"
)


def bare_loop(path: str) -> float:
    import timsrust_pyo3 as tr

    start = time.perf_counter()
    reader, meta = tr.FrameReader(path), tr.Metadata(path + "/analysis.tdf")
    for i in range(131):
        frame = reader.read_frame(i)
        meta.resolve_mzs(frame.tof_indices)
        frame.intensities  # noqa: B018 - the intensities taken out of timsrust, as read
        meta.resolve_scans(list(range(len(frame.scan_offsets) - 1)))
    return time.perf_counter() - start


def reader_loop(path: str, stop: int | None = None) -> tuple[float, int]:
    from mzpeak_dask.readers import ItemRange
    from mzpeak_dask.readers.bruker import BrukerTDFFormat

    start = time.perf_counter()
    survey = BrukerTDFFormat.survey(path)
    n = survey.spectrum_count if stop is None else stop
    count = sum(1 for _ in BrukerTDFFormat.read(path, ItemRange("spectrum", 0, n), {}))
    return time.perf_counter() - start, count


def _rss_of(code: str) -> float:
    """Peak RSS (MB) of a fresh process running ``code``."""
    child = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
    del child
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    path = str(SAMPLE)
    bare = min(bare_loop(path) for _ in range(args.rounds))
    ours, spectra = min(reader_loop(path) for _ in range(args.rounds))
    print(f"timsrust bare loop: {bare:.3f} s for 131 frames")
    print(f"reader: {ours:.3f} s for {spectra} spectra ({ours / spectra * 1e3:.2f} ms/spectrum)")
    print(f"ratio reader / bare loop: {ours / bare:.2f} (goal <= 1.5)")
    half = ("from tests.benchmarks.bench_vendor_bruker import reader_loop; "
            f"reader_loop({path!r}, 180)")  # fmt: skip
    whole = f"from tests.benchmarks.bench_vendor_bruker import reader_loop; reader_loop({path!r})"
    print(f"peak RSS: half the spectra {_rss_of(half):.0f} MB, all {_rss_of(whole):.0f} MB")
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        for k in range(args.copies):
            shutil.copytree(SAMPLE, repo / f"copy{k:03d}.d")
        start = time.perf_counter()
        result = subprocess.run(
            [sys.executable, "-m", "mzpeak_dask", "batch", str(repo), str(Path(tmp) / "out"),
             "--workers", str(args.workers)], capture_output=True, text=True,
        )  # fmt: skip
        wall = time.perf_counter() - start
    assert result.returncode == 0, result.stderr
    print(f"batch of {args.copies} copies (synthetic by replication) on {args.workers} workers: "
          f"{wall:.1f} s, {args.copies / wall * 3600:.0f} files/hour")  # fmt: skip
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
