"""XIC from an mzPeak archive of a big run: the command's wall time and peak RSS, and the same
XIC on one thread against a pyteomics loop, measured side by side in one run.

    python -m tests.benchmarks.bench_archive_xic [--copies 300] [--layout chunked]
        [--compare CHECKOUT]

The run is synthetic by replication: mzdata/small.mzML (14 profile MS1 + 34 centroid MS2
spectra) replicated ``--copies`` times (300: about 1 GB of mzML) with tests/replicate.py,
converted once with ``mzpeak-dask convert`` (defaults: point layout; or ``--layout``); both
are cached in bench-output/. The target is the base peak of the first MS1 spectrum, 10 ppm,
MS1, whole RT range (bench_zarr_export's). Figures, each in a fresh process:

* ``mzpeak-dask xic ARCHIVE --mz M --ppm 10 --json`` (Dask's threads): wall time and peak RSS
  (``wait4``);
* the XIC in a Python process on one thread (``scheduler="sync"``): a first call (opening
  the archive included) and a second;
* the pyteomics loop of bench_zarr_export on one thread, timed on ``--pyteomics-copies``
  copies and scaled to the run, and its ratio to the one-thread XIC.

Each is the best of ``--repeat`` rounds (the highest peak RSS), the rounds interleaving the
pyteomics loop and every checkout measured.

``--compare CHECKOUT`` measures another checkout of the package (its root folder) the same way
in the same run, for figures before and after a change. Goals (issue 37): peak RSS <= 500 MB,
one-thread XIC >= 10x the pyteomics loop.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from ..helpers.processes import run_measured
from .bench_xic import PPM, mzml_xic
from .bench_zarr_export import narrow_target
from .common import DATA, ROOT, machine, replicated, workdir

MB = 1e6
ONE_THREAD = """
import json, sys, time
import dask
from mzpeak_dask.analysis import open_runs, xic
archive, target, repeat = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
times, total = [], None
for _ in range(repeat):
    start = time.perf_counter()
    with dask.config.set(scheduler="sync"):
        (frame,) = xic(open_runs([archive]), [target], ppm={ppm}).values()
    times.append(time.perf_counter() - start)
    total = float(frame[target].sum())
print(json.dumps([times, total]))
"""


def run(root: Path, argv: list[str], timeout: float = 3600) -> tuple[float, int, str]:
    """``python ARGV`` with checkout ``root`` imported (and as the working directory, which
    ``-m`` and ``-c`` put first on the path): wall seconds, peak RSS in bytes (its
    own, from ``wait4``) and its standard output; a failure stops the benchmark."""
    out, err = workdir() / "bench_archive_xic.out", workdir() / "bench_archive_xic.err"
    try:
        done = run_measured(argv, root, out, err, timeout)
    except TimeoutError as exc:
        raise SystemExit(str(exc)) from None
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{err.read_text()[-3000:]}")
    return done.seconds, done.peak_rss, out.read_text()


def command(root: Path, archive: Path, target: float) -> tuple[float, int, float]:
    """The ``xic`` command: wall seconds, peak RSS and the summed XIC."""
    argv = ["-m", "mzpeak_dask", "xic", str(archive), "--mz", f"{target:.6f}", "--ppm", f"{PPM:g}"]
    seconds, rss, out = run(root, [*argv, "--json"])
    return seconds, rss, sum(row[1] for row in json.loads(out)["xic"]["data"])


def one_thread(root: Path, archive: Path, target: float, calls: int = 2) -> tuple[list, float]:
    """Seconds of ``calls`` XICs in one fresh process on one thread (the first opens the
    archive) and the summed XIC."""
    code = ONE_THREAD.format(ppm=PPM)
    _, _, out = run(root, ["-c", code, str(archive), repr(target), str(calls)])
    times, total = json.loads(out)
    return times, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=300)
    parser.add_argument("--pyteomics-copies", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--layout", choices=["point", "chunked"], help="default: convert's")
    parser.add_argument("--compare", type=Path, help="another checkout, measured beside")
    args = parser.parse_args()
    print(f"machine: {machine()} (shared with other sessions: times vary)")
    source = DATA / "mzdata" / "small.mzML"
    mzml_path = replicated(source, args.copies)
    layout = [f"--layout={args.layout}"] if args.layout else []
    archive = workdir() / f"{mzml_path.stem}{'.' + args.layout if layout else ''}.mzpeak"
    if not archive.exists():
        partial = archive.with_name("partial-" + archive.name)
        run(ROOT, ["-m", "mzpeak_dask", "convert", str(mzml_path), str(partial), "-q", *layout])
        os.replace(partial, archive)
    print(
        f"run: {source.name} x{args.copies} (synthetic by replication): "
        f"{mzml_path.stat().st_size / MB:,.0f} MB mzML, "
        f"archive {archive.stat().st_size / MB:,.0f} MB ({args.layout or 'default'} layout)"
    )
    target = narrow_target(mzml_path)
    sample = replicated(source, args.pyteomics_copies)
    checkouts = {"this checkout": ROOT}
    if args.compare:
        checkouts[str(args.compare)] = args.compare.resolve()
    # interleaved, best of --repeat each: the machine's load changes from minute to minute
    base = []
    figures: dict[str, dict[str, list]] = {k: {} for k in checkouts}
    for _ in range(args.repeat):
        start = time.perf_counter()
        mzml_xic([sample], np.array([target]))
        base.append((time.perf_counter() - start) * args.copies / args.pyteomics_copies)
        for label, root in checkouts.items():
            f = figures[label]
            seconds, rss, total = command(root, archive, target)
            times, one = one_thread(root, archive, target)
            for key, value in zip(
                ("wall", "rss", "first", "again", "sums"),
                (seconds, rss, times[0], times[1], {round(total, 3), round(one, 3)}),
                strict=True,
            ):
                f.setdefault(key, []).append(value)
    baseline = min(base)
    print(
        f"xic --mz {target:.4f} --ppm {PPM:g} (MS1, whole RT range); pyteomics loop "
        f"{baseline:.1f} s (timed on {args.pyteomics_copies} copies, scaled; best of "
        f"{args.repeat})"
    )
    for label, f in figures.items():
        first, again = min(f["first"]), min(f["again"])
        print(
            f"  {label}: command {min(f['wall']):.2f} s, peak RSS {max(f['rss']) / MB:.0f} MB "
            f"(goal <= 500); one thread {first:.2f} s = {baseline / first:.1f}x pyteomics "
            f"(goal >= 10; archive opened in the call), {again:.2f} s = "
            f"{baseline / again:.1f}x (opened before); sums {sorted(set().union(*f['sums']))}"
        )


if __name__ == "__main__":
    main()
