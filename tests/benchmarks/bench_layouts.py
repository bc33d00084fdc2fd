"""Layouts and encodings: archive sizes, encode/decode throughput, Numpress error.

    python -m tests.benchmarks.bench_layouts

Prints, measured in this one run:
* a size table: small.mzML and the other profile runs in ../shared/data, each layout and
  encoding, as bytes and as a ratio to the mzML, beside the reference implementation's
  archives of small.mzML (point 2,215,870 B; chunked + peaks 2,338,864 B; numpress 734,551 B).
  Both keep centroid spectra in spectra_data, so the variants compare one to one;
* encode and decode throughput (million points per second, one core) per encoding;
* the largest Numpress error per file (m/z relative to the lossless archive, intensities
  relative for intensities >= 1).
"""

from __future__ import annotations

import time

import numpy as np

from mzpeak_dask import ClusterOptions, ConvertOptions, convert, layouts, open_archive
from mzpeak_dask.encode.partition import prepare_signal
from mzpeak_dask.encode.plan import plan_run
from mzpeak_dask.format import vocabulary as V
from mzpeak_dask.readers import FORMATS

from ..helpers.real_runs import PROFILE_RUNS
from .common import DATA, machine, workdir

INLINE = ClusterOptions(cluster="inline")
VARIANTS = {
    "point": ConvertOptions(),
    "chunked delta": ConvertOptions(layout="chunked"),
    "chunked delta + peaks": ConvertOptions(layout="chunked", peaks=True),
    "chunked basic": ConvertOptions(layout="chunked", chunk_encoding="basic"),
    "chunked numpress + slof": ConvertOptions(
        layout="chunked", chunk_encoding="numpress", numpress_intensity="slof"
    ),
}
REFERENCE = {
    "point": 2_215_870,
    "chunked delta + peaks": 2_338_864,
    "chunked numpress + slof": 734_551,
}


def sizes() -> dict:
    out = {}
    print(f"{'run':44} {'variant':44} {'bytes':>11} {'/ mzML':>7} {'/ reference':>11}")
    for run in PROFILE_RUNS:
        size = run.stat().st_size
        for name, options in VARIANTS.items():
            path = workdir() / f"layout-{run.stem}-{name.replace(' ', '_')}.mzpeak"
            result = convert(run, path, options.updated(overwrite=True), cluster=INLINE)
            out[run.name, name] = path
            reference = ""
            if run.name == "small.mzML" and name in REFERENCE:
                reference = f"{result.output_bytes / REFERENCE[name]:.2f}"
            print(
                f"{run.name[:44]:44} {name:44} {result.output_bytes:>11,} "
                f"{result.output_bytes / size:>7.3f} {reference:>11}"
            )
    return out


def throughput() -> None:
    """Encode (prepare + layout) and decode (read every spectrum) of small.mzML x20 in memory."""
    run = DATA / "mzdata" / "small.mzML"
    print("throughput, one core, million points per second (small.mzML spectra x20):")
    for name, options in VARIANTS.items():
        if "peaks" in name:
            continue
        plan = plan_run(run, workdir(), options)
        records = (
            list(FORMATS["mzML"].read(plan.readable, plan.partitions[0].items, plan.survey.hints))
            * 20
        )
        schema = plan.spec.schemas[V.SPECTRUM]
        start = time.perf_counter()
        prepared = [
            prepare_signal(schema, k, r.arrays, profile=r.is_profile, options=options)[0]
            for k, r in enumerate(records)
        ]
        layouts.encode(schema, prepared, options)
        encode_seconds = time.perf_counter() - start
        points = sum(p.length for p in prepared)
        path = workdir() / f"layout-small-{name.replace(' ', '_')}.mzpeak"
        convert(run, path, options.updated(overwrite=True), cluster=INLINE)
        with open_archive(path) as archive:
            start = time.perf_counter()
            for _ in range(20):
                stored = sum(len(s) for s in archive)
            decode_seconds = time.perf_counter() - start
        print(
            f"  {name:26} encode {points / encode_seconds / 1e6:6.2f}   "
            f"decode {20 * stored / decode_seconds / 1e6:6.2f}"
        )


def numpress_errors(paths: dict) -> None:
    print("Numpress linear + SLOF, largest error against the lossless archive:")
    for run in PROFILE_RUNS:
        with (
            open_archive(paths[run.name, "point"]) as exact,
            open_archive(paths[run.name, "chunked numpress + slof"]) as lossy,
        ):
            mz_error = intensity_error = 0.0
            for a, b in zip(exact, lossy, strict=True):
                nonzero, big = a.intensity != 0, a.intensity >= 1
                if nonzero.any():
                    mz_error = max(
                        mz_error, float(np.max(np.abs(a.mz - b.mz)[nonzero] / a.mz[nonzero]))
                    )
                if big.any():
                    intensity_error = max(
                        intensity_error,
                        float(np.max(np.abs(a.intensity - b.intensity)[big] / a.intensity[big])),
                    )
        print(f"  {run.name:44} m/z {mz_error:.2e} (relative)   intensity {intensity_error:.2e}")


def main() -> None:
    print(f"machine: {machine()}")
    paths = sizes()
    throughput()
    numpress_errors(paths)


if __name__ == "__main__":
    main()
