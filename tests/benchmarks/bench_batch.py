"""Batch benchmark: a repository of real runs on 1 and 2 workers.

    python -m tests.benchmarks.bench_batch

The repository is every readable MS file in ../shared/data (the deliberately broken ones
left out), copied into bench-output/batch-repository. Prints files per hour, MB per second and
the parallel efficiency (speedup / workers), measured in this one run; cluster start-up is
included, since a batch job pays for it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time

from ..batch.commands import batch_command
from .common import DATA, ROOT, machine, workdir

BROKEN = {"FileFilter_39_input_corrupt.mzML", "IndexedmzMLFile_2_broken.mzML"}
SUFFIXES = (".mzML", ".mzML.gz", ".mzML.bz2", ".mzXML", ".mgf", ".mzMLb")


def repository():
    target = workdir() / "batch-repository"
    if not target.exists():
        for path in sorted(DATA.rglob("*")):
            if path.is_file() and path.name.endswith(SUFFIXES) and path.name not in BROKEN:
                copy = target / path.relative_to(DATA)
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, copy)
    return target


def run(source, workers: int) -> dict:
    output = workdir() / f"batch-{workers}"
    shutil.rmtree(output, ignore_errors=True)
    start = time.perf_counter()
    command = batch_command(source, output, "--workers", str(workers), "-q")
    subprocess.run(command, cwd=ROOT, check=False)
    seconds = time.perf_counter() - start
    doc = json.loads((output / "batch_report.json").read_text())
    converted = [f for f in doc["files"] if f["status"] == "converted"]
    mb = sum(f["input_bytes"] for f in converted) / 1e6
    return {
        "seconds": seconds,
        "files": len(converted),
        "failed": doc["summary"]["failed"],
        "mb": mb,
    }


def main() -> None:
    source = repository()
    files = [p for p in source.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files) / 1e6
    print(f"machine: {machine()}")
    print(f"repository: {len(files)} real runs from ../shared/data, {total:.1f} MB")
    one, two = run(source, 1), run(source, 2)
    for workers, r in ((1, one), (2, two)):
        print(
            f"  {workers} worker{'s' if workers > 1 else ' '}: {r['seconds']:6.1f} s  "
            f"{r['files']} converted, {r['failed']} failed  "
            f"{r['files'] / r['seconds'] * 3600:8.0f} files/hour  "
            f"{r['mb'] / r['seconds']:5.2f} MB/s"
        )
    speedup = one["seconds"] / two["seconds"]
    print(f"  speedup {speedup:.2f}, parallel efficiency {speedup / 2:.0%}")


if __name__ == "__main__":
    main()
