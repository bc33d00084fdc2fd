"""Thermo ``.raw`` benchmark: a batch of copies of the one real sample on 2 workers, and the
reader's cost per spectrum against fisher-py's bare read loop.

    python -m tests.benchmarks.bench_vendor_thermo [COPIES]    # default 100

The batch is COPIES byte-identical copies of ../shared/data/vendor/thermo/Angiotensin_325-CID.raw
(10 Orbitrap profile MS2 scans, 0.4 MB each: a batch of replicated files, not a real
repository), converted by ``mzpeak-dask batch --workers 2`` (cluster start-up included).
Printed: files per hour and spectra per second.

Per spectrum, in a fresh process, rounds over the sample's scans (medians, and the fastest
rounds, the figure least disturbed by other work on the machine):
- ``bare``: fisher-py's own loop (its wrappers: scan statistics, segmented scan, positions and
  intensities made numpy arrays), the least any reader built on it can do;
- ``reader``: this package's reader (``ThermoRawFormat.read``: the same data plus every
  metadata field it maps, as records);
- ``cached``/``uncached``: the records of the scans with the reader's caches (scan filter
  facts, precursor params) and with them bypassed, the figure that keeps those caches;
- ``convert``: a whole inline conversion of the sample (survey, read, encode, write), divided
  by its scans, timed after the two loops.
The goal is reader / bare <= 1.5.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
import warnings

from ..batch.commands import batch_command
from .common import DATA, ROOT, in_subprocess, machine, workdir

SAMPLE = DATA / "vendor" / "thermo" / "Angiotensin_325-CID.raw"
ROUNDS = 30


def repository(copies: int):
    target = workdir() / f"thermo-repository-{copies}"
    if not target.exists():
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        for i in range(copies):
            shutil.copy(SAMPLE, partial / f"copy_{i:03d}.raw")
        partial.rename(target)
    return target


def batch(source, copies: int) -> dict:
    output = workdir() / "thermo-batch"
    shutil.rmtree(output, ignore_errors=True)
    start = time.perf_counter()
    command = batch_command(source, output, "--workers", "2", "-q")
    subprocess.run(command, cwd=ROOT, check=False, timeout=3600)
    seconds = time.perf_counter() - start
    doc = json.loads((output / "batch_report.json").read_text())
    converted = [f for f in doc["files"] if f["status"] == "converted"]
    return {
        "seconds": seconds,
        "files": len(converted),
        "spectra": sum(f["spectra"] for f in converted),
        "failed": doc["summary"]["failed"],
    }


def per_spectrum() -> dict:
    """Run in a fresh process: the three costs, in microseconds per spectrum."""
    import numpy as np

    from mzpeak_dask import ClusterOptions, ConvertOptions, convert
    from mzpeak_dask.readers import ItemRange
    from mzpeak_dask.readers.thermo import ThermoRawFormat
    from mzpeak_dask.readers.thermo_runtime import open_raw
    from mzpeak_dask.readers.thermo_scans import ScanReader, _facts, spectrum

    class _Uncached(ScanReader):  # the reader's caches bypassed: every scan read in full
        def facts(self, scan, filter_string):
            return _facts(self.raw.GetScanEventForScanNumber(scan))

        @property
        def windows(self):
            return {}

        @windows.setter
        def windows(self, value) -> None:
            pass

    path = str(SAMPLE)
    survey = ThermoRawFormat.survey(path)  # loads Mono and opens the file (not timed)
    n = survey.spectrum_count
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fisher_py.data import Device
        from fisher_py.raw_file_reader import RawFileReaderAdapter
    access = RawFileReaderAdapter.file_factory(path)
    access.select_instrument(Device.MS, 1)

    def bare() -> None:
        for scan in range(1, n + 1):
            stats = access.get_scan_stats_for_scan_number(scan)
            segmented = access.get_segmented_scan_from_scan_number(scan, stats)
            np.array(segmented.positions), np.array(segmented.intensities)

    def reader() -> None:
        for _ in ThermoRawFormat.read(path, ItemRange("spectrum", 0, n), survey.hints):
            pass

    raw = open_raw(path, path)
    cached, uncached = ScanReader(raw), _Uncached(raw)

    def records(scans: ScanReader) -> None:
        for scan in range(1, n + 1):
            spectrum(scans, scan, scan - 1, False)

    out_dir = workdir() / "thermo-inline"
    out_dir.mkdir(exist_ok=True)
    options = ConvertOptions(overwrite=True)

    def whole() -> None:
        convert(SAMPLE, out_dir / "run.mzpeak", options, cluster=ClusterOptions(cluster="inline"))

    samples: dict[str, list[float]] = {k: [] for k in ("bare", "reader", "cached", "uncached")}
    samples["convert"] = []

    def timed(name: str, fn) -> None:
        start = time.perf_counter()
        fn()
        samples[name].append((time.perf_counter() - start) / n * 1e6)

    bare(), reader()  # warm
    for _ in range(ROUNDS):  # the loops alternate, so that load on the machine hits each
        timed("bare", bare)
        timed("reader", reader)
        timed("cached", lambda: records(cached))
        timed("uncached", lambda: records(uncached))
    whole()  # warm: imports, caches (after the loops: its garbage would weigh on them)
    for _ in range(ROUNDS // 3):
        timed("convert", whole)
    return (
        {k: statistics.median(v) for k, v in samples.items()}
        | {f"{k}_min": min(v) for k, v in samples.items()}
        | {"scans": n}
    )


def main() -> None:
    copies = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    print(f"machine: {machine()}")
    costs = in_subprocess("tests.benchmarks.bench_vendor_thermo", "--per-spectrum")
    gain = 1 - costs["cached"] / costs["uncached"]
    print(
        f"records per spectrum: with the reader's caches {costs['cached']:.0f} us, without "
        f"{costs['uncached']:.0f} us ({gain:.0%} saved; kept if >= 10%)"
    )
    print(
        f"per spectrum ({costs['scans']} profile scans x {ROUNDS} interleaved rounds, medians): "
        f"fisher-py bare loop {costs['bare']:.0f} us, our reader {costs['reader']:.0f} us "
        f"({costs['reader'] / costs['bare']:.2f}x bare; goal <= 1.5x), whole inline conversion "
        f"{costs['convert']:.0f} us ({costs['convert'] / costs['bare']:.2f}x bare); fastest "
        f"rounds: bare {costs['bare_min']:.0f} us, reader {costs['reader_min']:.0f} us "
        f"({costs['reader_min'] / costs['bare_min']:.2f}x)"
    )
    result = batch(repository(copies), copies)
    hours = result["seconds"] / 3600
    print(
        f"batch of {copies} copies of {SAMPLE.name} (replicated, not distinct runs), 2 workers: "
        f"{result['files']} converted, {result['failed']} failed in {result['seconds']:.1f} s = "
        f"{result['files'] / hours:,.0f} files/hour, {result['spectra'] / result['seconds']:.0f} "
        f"spectra/s (cluster start included)"
    )
    print(f"machine: {machine().replace('at start', 'at end')}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--per-spectrum"]:
        print(json.dumps(per_spectrum()))
    else:
        main()
