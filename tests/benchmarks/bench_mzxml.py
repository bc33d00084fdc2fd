"""mzXML benchmark: the lean reader against a bare pyteomics parse, the time per scan across
the file, 2 workers against 1, and the archive checked against pyteomics' values.

    python -m tests.benchmarks.bench_mzxml [--source PATH] [--mb 100] [--rounds 3]

Input: ../shared/data/depthcharge/TMT10-Trial-8.mzXML (Orbitrap Fusion SPS-MS3: 4 MS1, 4 MS2,
3 MS3 scans, 64-bit uncompressed peaks, 238 peaks a scan on average: a DDA run's mix of many
short scans) replicated to ~100 MB, its scans renumbered and its index rebuilt
(tests/helpers/mzxml_files.py) — synthetic by replication. Prints, measured side by side in
this one run (with the load average: figures on a shared machine are noisy, ratios less so):

* a cold ``mzpeak-dask convert`` with the defaults (a fresh process) against a bare pyteomics
  ``MzXML(path, use_index=False)`` iteration with arrays decoded, in interleaved rounds; the
  goal's figure is the median of the rounds' ratios (goal <= 0.6);
* the time per scan of the lean reader (records built, arrays decoded) over the last tenth of
  the scans against the first tenth, each the median of three reads (goal <= 1.2);
* a conversion on a LocalCluster of 1 worker against one of 2, each in a fresh process with
  its cluster started and warmed before the clock starts (goal >= 1.7), and the same ratio
  of the CPU seconds of the busiest worker (the speed-up a core a worker would give: wall
  times on a loaded machine are not);
* the archive of the cold conversion read back and compared with what pyteomics decodes from
  the input: as many scans, and every one of them (or ``--sample`` spread over the run) with its
  m/z and intensity arrays exactly, id, MS level, retention time, polarity, representation
  and precursors (the checks of tests/test_roundtrip.py). The archive's bytes equal those of
  the pyteomics reader this one replaced: tests/readers/test_mzxml_lean.py compares the records
  on every mzXML of the data and on replicated runs (docs/performance.md, 2026-12-07).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from .common import DATA, in_subprocess, machine, timed, warm_cluster_run, workdir

SOURCE = DATA / "depthcharge" / "TMT10-Trial-8.mzXML"
READER = "mzpeak_dask.readers.mzxml"


def replicated_mzxml(source: Path, mb: int) -> Path:
    """``source`` replicated to ``mb`` MB in bench-output/ (written aside, then renamed)."""
    from ..helpers.mzxml_files import replicated

    target = workdir() / f"{source.name.split('.')[0]}_{mb}MB.mzXML"
    if not target.exists():
        partial = target.with_name(target.name + ".partial")
        replicated(source, partial, mb * 1_000_000)
        os.replace(partial, target)
    return target


def pyteomics_iterate(path: Path) -> int:
    from pyteomics import mzxml

    with mzxml.MzXML(str(path), use_index=False) as reader:
        return sum(1 for _ in reader)


def cold_convert(source: Path, output: Path, *flags: str) -> tuple[float, str]:
    """``mzpeak-dask convert`` with the defaults in a fresh process: seconds, where it ran."""
    from .bench_single_run import cold_convert as run

    return run(source, output, *flags)


def tenths(path: Path) -> tuple[float, float, int]:
    """Seconds a scan of the lean reader over the first and the last tenth of the scans (the
    median of three reads each, alternated), and the scans a tenth holds."""
    from mzpeak_dask.encode.plan import item_range
    from mzpeak_dask.readers import SPECTRA
    from mzpeak_dask.readers.mzxml import MzXMLFormat

    survey = MzXMLFormat.survey(str(path))
    n = survey.spectrum_count
    tenth = n // 10
    first = item_range(survey, SPECTRA, 0, tenth)
    last = item_range(survey, SPECTRA, n - tenth, n)
    times: dict[str, list[float]] = {"first": [], "last": []}
    for items in (first, last):  # caches (the header, the vocabulary) filled, not timed
        sum(1 for _ in MzXMLFormat.read(str(path), items, survey.hints))
    for _ in range(3):
        for label, items in (("first", first), ("last", last)):
            seconds, count = timed(
                lambda i=items: sum(1 for _ in MzXMLFormat.read(str(path), i, survey.hints))
            )
            assert count == tenth
            times[label].append(seconds / count)
    return statistics.median(times["first"]), statistics.median(times["last"]), tenth


def check_archive(path: Path, archive: Path, sample: int) -> int:
    """The archive against pyteomics' values of the input (AssertionError on a difference):
    the scan count, and every scan (``sample`` > 0: that many, spread evenly over the run)."""
    import re

    from pyteomics import mzxml

    from mzpeak_dask import open_archive

    from ..helpers import oracle
    from ..test_roundtrip import check_metadata, check_signal

    # pyteomics read linearly (use_index=False; its index-driven reads start from the top of
    # the file for each scan with lxml 6), its scans put back in document order
    with mzxml.MzXML(str(path), use_index=False) as reader:
        by_num = {str(info["num"]): oracle._mzxml_spectrum(info) for info in reader}
    order = re.findall(rb'<scan\s[^>]*?\bnum="(\d+)"', path.read_bytes())
    expected = [by_num[n.decode()] for n in order]
    with open_archive(archive) as opened:
        assert len(opened) == len(expected)
        n = len(expected)
        picks = (
            sorted({int(k * (n - 1) / max(1, sample - 1)) for k in range(sample)})
            if sample
            else range(n)
        )
        for i in picks:
            want, spectrum = expected[i], opened[i]
            check_metadata(want, spectrum, f"spectrum {i}")
            check_signal(want["arrays"], spectrum.arrays, f"spectrum {i}")
    return len(picks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sample", type=int, default=0, help="scans compared (0: all)")
    if len(sys.argv) == 4 and sys.argv[1] == "run":
        print(json.dumps(warm_cluster_run(sys.argv[2], int(sys.argv[3]), READER)))
        return
    args = parser.parse_args()
    print(f"machine: {machine()}")
    path = replicated_mzxml(args.source, args.mb)
    print(
        f"input: {path.name}, {path.stat().st_size / 1e6:.0f} MB ({args.source.name} "
        f"replicated, scans renumbered, index rebuilt: synthetic by replication)"
    )
    pyteomics_iterate(DATA / "depthcharge" / "TMT10-Trial-8.mzXML")  # imports, not timed
    output = workdir() / "mzxml_cold.mzpeak"
    ratios, bare, cold = [], [], []
    for k in range(args.rounds):
        parse_s, count = timed(pyteomics_iterate, path)
        convert_s, where = cold_convert(path, output)
        bare.append(parse_s)
        cold.append(convert_s)
        ratios.append(convert_s / parse_s)
        print(
            f"  round {k + 1}: pyteomics MzXML(use_index=False) {parse_s:6.2f} s "
            f"({count:,} scans), cold convert {convert_s:6.2f} s [{where}]: "
            f"{convert_s / parse_s:.2f}"
        )
    print(
        f"cold convert / bare pyteomics parse: {statistics.median(ratios):.2f} "
        f"(median of the rounds' ratios; medians {statistics.median(cold):.2f} s / "
        f"{statistics.median(bare):.2f} s; goal <= 0.6)"
    )
    first, last, tenth = tenths(path)
    print(
        f"time per scan, lean reader: first tenth {first * 1e3:.2f} ms, last tenth "
        f"{last * 1e3:.2f} ms ({tenth:,} scans each): last / first {last / first:.2f} "
        "(goal <= 1.2)"
    )
    module = "tests.benchmarks.bench_mzxml"
    one = in_subprocess(module, "run", str(path), "1")
    two = in_subprocess(module, "run", str(path), "2")
    cpu_one, cpu_two = one["busiest_worker_cpu"], two["busiest_worker_cpu"]
    print(
        f"LocalCluster, started beforehand: 1 worker {one['seconds']:.2f} s, 2 workers "
        f"{two['seconds']:.2f} s: speedup {one['seconds'] / two['seconds']:.2f} (goal >= 1.7); "
        f"CPU of the busiest worker {cpu_one:.2f} s / {cpu_two:.2f} s: {cpu_one / cpu_two:.2f}"
    )
    checked = check_archive(path, output, args.sample)
    print(
        f"archive of the cold conversion: as many scans as pyteomics reads, {checked:,} of them "
        "compared: equal to pyteomics' values (arrays exact; id, MS level, time, polarity, "
        "representation, precursors)"
    )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
