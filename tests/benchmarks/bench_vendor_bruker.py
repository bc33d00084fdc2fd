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
* peak RSS and the anonymous memory at the end of a process reading every spectrum of the
  sample and of its frames replicated 8 times (flat memory: the anonymous memory should not
  grow; the peak RSS includes the file pages of ``analysis.tdf_bin``, which timsrust maps).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
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


_ANON = "; print([l.split()[1] for l in open('/proc/self/status') if l.startswith('RssAnon')][0])"


def _rss_of(code: str) -> tuple[float, float]:
    """Peak RSS (MB) of a fresh process running ``code`` (``wait4``: that process alone), and
    its anonymous memory at the end (MB: without the pages of files it maps)."""
    child = subprocess.Popen([sys.executable, "-c", code + _ANON], stdout=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH":
                                  str(Path(__file__).resolve().parents[2])})  # fmt: skip
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.stdout.close()
    assert status == 0
    return usage.ru_maxrss / 1024, int(out.split()[-1]) / 1024


def replicate(folder: Path, copies: int) -> Path:
    """The sample with its frames repeated ``copies`` times one after the other (their times
    shifted, their packets appended): a longer run, synthetic by replication."""
    folder.mkdir()
    data = (SAMPLE / "analysis.tdf_bin").read_bytes()
    with open(folder / "analysis.tdf_bin", "wb") as f:
        for _ in range(copies):
            f.write(data)
    shutil.copy(SAMPLE / "analysis.tdf", folder / "analysis.tdf")
    db = sqlite3.connect(folder / "analysis.tdf")
    (n,) = db.execute("SELECT count(*) FROM Frames").fetchone()
    (span,) = db.execute("SELECT max(Time) + 1 FROM Frames").fetchone()
    columns = [r[1] for r in db.execute("PRAGMA table_info(Frames)")]
    shifted = {"Id": f"Id + {n} * k.k", "Time": f"Time + {span} * k.k",
               "TimsId": f"TimsId + {len(data)} * k.k"}  # fmt: skip
    select = ", ".join(shifted.get(c, c) for c in columns)
    db.execute(f"CREATE TEMP TABLE k AS WITH RECURSIVE r(k) AS (SELECT 1 UNION ALL "
               f"SELECT k + 1 FROM r WHERE k < {copies - 1}) SELECT k FROM r "
               f"WHERE k < {copies}")  # fmt: skip
    db.execute(f"INSERT INTO Frames SELECT {select} FROM Frames, k WHERE Id <= {n}")
    db.execute(f"INSERT INTO DiaFrameMsMsInfo SELECT Frame + {n} * k.k, WindowGroup "
               f"FROM DiaFrameMsMsInfo, k WHERE Frame <= {n}")  # fmt: skip
    db.commit()
    db.close()
    return folder


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
    with tempfile.TemporaryDirectory() as tmp:
        rss = {}
        for copies in (1, 8):
            longer = str(replicate(Path(tmp) / f"x{copies}.d", copies))
            rss[copies] = _rss_of("from tests.benchmarks.bench_vendor_bruker import reader_loop;"
                                  f" reader_loop({longer!r})")  # fmt: skip
        print("reading every spectrum, peak RSS / anonymous memory at the end: "
              f"{rss[1][0]:.0f} / {rss[1][1]:.0f} MB for 131 frames, {rss[8][0]:.0f} / "
              f"{rss[8][1]:.0f} MB for 1,048 frames (the sample's frames 8 times, synthetic by "
              "replication; the peak counts the pages of analysis.tdf_bin timsrust maps)")
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
