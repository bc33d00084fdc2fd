"""Remote-archive benchmark: what ``info``, one random spectrum and an XIC cost over HTTP and
S3 (requests made, bytes transferred, time) against the same archive on local disk; the
conversion throughput s3 -> s3 against local -> local, and http -> s3 (the input on the HTTP
server, whose ranged GETs cost the same for any object, where moto's read the whole object
each: see the last lines); the same s3 -> s3 conversion on s3rver, a second S3-compatible server
whose ranged GETs read only their range; and what a ranged GET costs each S3 server.

    python -m tests.benchmarks.bench_remote [--copies 28] [--spectra 20] [--no-cluster]

The archive is mzdata/small.mzML replicated ``--copies`` times into one run and converted
(about 40 MB at 28 copies). Both servers are real and on loopback: a static HTTP server with
Range support that counts the requests and bytes it sends, and moto's S3 server (its figures
are counted by the reader: every request it made and the bytes it received; a local archive
makes none). "One random
spectrum" is the median over ``--spectra`` random spectra, each read from a freshly opened
archive (opening not counted); its row group is the compressed size of the row groups that can
hold it, from the footer. Loopback has no latency: the times show overheads, not a WAN.
Last, what a run of several partitions converted on a 2-worker LocalCluster reads of its input
over HTTP.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from mzpeak_dask import ClusterOptions, ConvertOptions, convert, open_archive
from mzpeak_dask.analysis import xic
from mzpeak_dask.read.archive import cached_archive
from mzpeak_dask.read.summary import summarize
from mzpeak_dask.storage import filesystem, set_default_options
from mzpeak_dask.storage.ranges import TOTAL

from ..helpers.servers import (
    SERVER_PIDS,
    new_bucket,
    range_server,
    s3_client,
    s3_server,
    s3rver_options,
    s3rver_server,
)
from .common import DATA, machine, replicated, workdir
from .remote_breakdown import Breakdown

INLINE = ClusterOptions(cluster="inline")
TARGETS = [445.12, 524.26, 1221.99]


def group_bytes(archive, i: int) -> int:
    signal = archive.signal("spectrum")
    md = signal.file.metadata
    groups = signal.groups_for(np.array([i]))
    return sum(
        md.row_group(g).column(j).total_compressed_size
        for g in groups
        for j in range(md.num_columns)
    )


class Counter:
    """Requests and bytes: the HTTP server's log, or the reader's count of every request this
    process made (mzpeak_dask.storage.ranges.TOTAL)."""

    def __init__(self, server=None):
        self.server = server

    def read(self, archive=None) -> tuple[int, int]:
        if self.server is not None:
            return self.server.served.requests, self.server.served.bytes
        return TOTAL.requests, TOTAL.bytes


def measure(where: str, counter: Counter, spectra: list[int]) -> dict:
    out = {}
    start = time.perf_counter()
    before = counter.read()
    with open_archive(where) as archive:
        summarize(archive)
        after = counter.read(archive)
    out["info"] = (after[0] - before[0], after[1] - before[1], time.perf_counter() - start)
    rows = []
    for i in spectra:
        with open_archive(where) as archive:
            before = counter.read(archive)
            start = time.perf_counter()
            archive[i]
            seconds = time.perf_counter() - start
            after = counter.read(archive)
            rows.append(
                (after[0] - before[0], after[1] - before[1], seconds, group_bytes(archive, i))
            )
    out["spectrum"] = tuple(statistics.median(r[k] for r in rows) for k in range(4))
    out["spectrum_max_requests"] = max(r[0] for r in rows)
    out["spectrum_max_ratio"] = max(r[1] / max(r[3], 1) for r in rows)
    cached_archive.clear()
    before = counter.read()
    start = time.perf_counter()
    xic([where], TARGETS, ppm=10)
    seconds = time.perf_counter() - start
    after = counter.read()
    cached_archive.clear()
    out["xic"] = (after[0] - before[0], after[1] - before[1], seconds)
    return out


def timed_conversion(source: Path | str, output: Path | str, server: int | None) -> Breakdown:
    """One inline conversion, with where its time went (``server``: the S3 server's process)."""
    with Breakdown(server).timing() as breakdown:
        convert(source, output, ConvertOptions(overwrite=True), cluster=INLINE)
    return breakdown


def fastest(runs: list[Breakdown]) -> tuple[Breakdown, float, list[float]]:
    """The fastest of ``runs`` (on a shared machine the others measure its load), its seconds,
    and every run's seconds."""
    each = [b.seconds["total"] for b in runs]
    best = min(runs, key=lambda b: b.seconds["total"])
    return best, best.seconds["total"], each


def listed(seconds: list[float]) -> str:
    return ", ".join(f"{t:.2f}" for t in seconds)


def compared(
    server: str, size: int, local: list[Breakdown], remote: list[Breakdown], label: str
) -> tuple[Breakdown, Breakdown]:
    """Print local -> local against s3 -> s3 on ``server``: the fastest of each (and each
    run's seconds), where its time went, and the s3 run's requests; returns the fastest two."""
    (fast_local, t_local, each_local), (fast_remote, t_remote, each_remote) = map(
        fastest, (local, remote)
    )
    print(
        f"convert {size / 1e6:.1f} MB mzML, inline, {server}, fastest of {len(local)}: "
        f"local -> local {size / t_local / 1e6:.1f} MB/s ({t_local:.2f} s); s3 -> s3 "
        f"{size / t_remote / 1e6:.1f} MB/s ({t_remote:.2f} s); s3/local time "
        f"{t_remote / t_local:.2f}x (goal <= 1.2x; each run: local {listed(each_local)} s, "
        f"s3 {listed(each_remote)} s; load average {os.getloadavg()[0]:.2f} at the end)"
    )
    print(f"where the time went on {label} (the coordinator's wall time; fastest runs):")
    print("\n".join(fast_local.lines(fast_remote, ("local", label))))
    print(f"s3 -> s3 requests on {label} (at the client): {fast_remote.request_line()}")
    return fast_local, fast_remote


def convert_throughput(source: Path, bucket: str, endpoint: str, root: Path, repeats: int) -> None:
    """local -> local and s3 -> s3, alternated ``repeats`` times; the fastest of each counts
    (on a shared machine the others measure its load), with where its time went."""
    size = source.stat().st_size
    s3_client(endpoint).upload_file(str(source), bucket, f"in/{source.name}")
    server = SERVER_PIDS.get(endpoint)
    out = f"s3://{bucket}/out/run.mzpeak"

    local, remote, transfers, served = [], [], [], []
    for _ in range(repeats):
        local.append(timed_conversion(source, root / "local-out.mzpeak", server))
        before = (TOTAL.requests, TOTAL.bytes)
        remote.append(timed_conversion(f"s3://{bucket}/in/{source.name}", out, server))
        transfers.append((TOTAL.requests - before[0], TOTAL.bytes - before[1]))
        with range_server(source.parent) as http:
            served.append(timed_conversion(f"{http.url}/{source.name}", out, server))
    where = "in a process of its own" if server else "on a thread of this process"
    fast_local, fast_remote = compared(f"S3 server (moto) {where}", size, local, remote, "moto")
    t_local = fast_local.seconds["total"]
    fast_http, t_http, _ = fastest(served)
    print(
        f"convert http -> s3 (the input on the loopback HTTP server, whose ranged GET costs the "
        f"same for any object; the archive to moto), fastest of {repeats}: {t_http:.2f} s, "
        f"{t_http / t_local:.2f}x local; its plan {fast_http.seconds['plan (survey, sample)']:.2f}"
        f" s (s3 -> s3: {fast_remote.seconds['plan (survey, sample)']:.2f} s)"
    )
    requests, received = transfers[-1]
    print(
        f"convert s3 -> s3 read the input by ranges: {requests} requests, {received / 1e6:.1f} MB "
        f"for a {size / 1e6:.1f} MB object ({received / size:.2f}x: the plan's reads and the "
        "partitions, the SHA-256 taken from them)"
    )


def server_costs(
    source: Path, bucket: str, root: Path, put: Callable[[Path, str], None], name: str = "moto"
) -> None:
    """What one ranged GET costs the S3 server, for a large object and a small one, and
    whether it serves 7 of them side by side (a plan's sample): wall time against the sum of
    the same GETs one after another. moto answers a ranged GET by reading the whole object
    (and under a lock of the object's), so its cost grows with the object, unlike S3's."""
    small = root / "one-mb.bin"
    with open(source, "rb") as f:
        small.write_bytes(f.read(1 << 20))
    put(small, "in/one-mb.bin")
    for key, size in ((f"in/{source.name}", source.stat().st_size), ("in/one-mb.bin", 1 << 20)):
        fs, path = filesystem(f"s3://{bucket}/{key}")
        spans = [(k * size // 8, k * size // 8 + (64 << 10)) for k in range(7)]
        fs.cat_file(path, start=0, end=16)  # a connection ready
        one = []
        for a, b in spans:
            start = time.perf_counter()
            fs.cat_file(path, start=a, end=b)
            one.append(time.perf_counter() - start)
        start = time.perf_counter()
        fs.cat_ranges([path] * len(spans), [a for a, _ in spans], [b for _, b in spans])
        wall = time.perf_counter() - start
        print(
            f"S3 server ({name}): a 64 KiB ranged GET of a {size / 1e6:.1f} MB object "
            f"{statistics.median(one) * 1e3:.1f} ms; 7 of them side by side {wall * 1e3:.1f} ms "
            f"wall, one after another {sum(one) * 1e3:.1f} ms"
        )
    small.unlink()


def on_s3rver(source: Path, root: Path, repeats: int) -> None:
    """s3 -> s3 again, on s3rver: a second S3-compatible server (Node, in a process of its
    own) that reads a ranged GET's bytes from its file by their range, as a store does, where
    moto reads the whole object; alternated with local -> local ``repeats`` times, the fastest
    of each counting; then what a ranged GET costs it."""
    folder = root / "s3rver"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    with s3rver_server(folder, "runs") as endpoint:
        set_default_options(s3rver_options(endpoint))
        try:
            fs, _ = filesystem("s3://runs/in")
            fs.put_file(str(source), f"runs/in/{source.name}")
            server = SERVER_PIDS.get(endpoint)
            local, remote = [], []
            for _ in range(repeats):
                local.append(timed_conversion(source, root / "local-out.mzpeak", server))
                remote.append(
                    timed_conversion(
                        f"s3://runs/in/{source.name}", "s3://runs/out/run.mzpeak", server
                    )
                )
            server_name = "s3rver (a second S3 server, in a process of its own)"
            compared(server_name, source.stat().st_size, local, remote, "s3rver")
            server_costs(
                source, "runs", root, lambda p, k: fs.put_file(str(p), f"runs/{k}"), "s3rver"
            )
        finally:
            set_default_options(None)
    shutil.rmtree(folder, ignore_errors=True)


def cluster_reads(root: Path, copies: int = 4) -> None:
    """What a run of several partitions converted on a 2-worker LocalCluster reads of its
    input over HTTP: the workers' partitions, and the stream its SHA-256 is taken from."""
    source = replicated(DATA / "mzdata" / "small.mzML", copies)
    served = root / "served"
    served.mkdir(exist_ok=True)
    shutil.copy(source, served / source.name)
    size = source.stat().st_size
    with range_server(served) as http:
        result = convert(
            f"{http.url}/{source.name}",
            root / "cluster-out.mzpeak",
            ConvertOptions(overwrite=True),
            cluster=ClusterOptions(cluster="local", workers=2),
        )
        gets = sum(1 for entry in http.served.log if entry[0] == "GET")
        print(
            f"convert over HTTP on a 2-worker LocalCluster, {size / 1e6:.1f} MB mzML "
            f"({result.spectra} spectra): {gets} GETs for {http.served.bytes / 1e6:.1f} MB, "
            f"{http.served.bytes / size:.2f}x the object (its partitions on the workers, and "
            "once more for its SHA-256)"
        )
    shutil.rmtree(served, ignore_errors=True)
    (root / "cluster-out.mzpeak").unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=28)
    parser.add_argument("--spectra", type=int, default=20)
    parser.add_argument("--no-convert", action="store_true", help="skip the throughput part")
    parser.add_argument("--repeats", type=int, default=2, help="conversions of each kind")
    parser.add_argument(
        "--no-cluster", action="store_true", help="skip the reads of a run on a cluster"
    )
    args = parser.parse_args()
    print(machine())
    source = replicated(DATA / "mzdata" / "small.mzML", args.copies)
    root = workdir() / "remote"
    root.mkdir(exist_ok=True)
    archive = root / f"small_x{args.copies}.mzpeak"
    if not archive.exists():
        convert(source, archive, ConvertOptions(), cluster=INLINE)
    size = archive.stat().st_size
    with open_archive(archive) as a:
        n = len(a)
    rng = np.random.default_rng(13)
    spectra = sorted(rng.choice(n, size=min(args.spectra, n), replace=False).tolist())
    print(f"archive: {archive.name}, {size / 1e6:.1f} MB, {n} spectra")
    with range_server(root) as http, s3_server(own_process=True) as endpoint:
        bucket = new_bucket(endpoint)
        s3_client(endpoint).upload_file(str(archive), bucket, archive.name)
        figures = {
            "local": measure(str(archive), Counter(), spectra),
            "http": measure(f"{http.url}/{archive.name}", Counter(http), spectra),
            "s3": measure(f"s3://{bucket}/{archive.name}", Counter(), spectra),
        }
        print(
            f"{'':6} {'info: req':>10} {'bytes':>10} {'ms':>7} | {'spectrum: req':>13} "
            f"{'bytes':>9} {'row group':>9} {'ms':>6} | {'xic: req':>8} {'bytes':>11} {'ms':>7}"
        )
        for name, f in figures.items():
            i, s, x = f["info"], f["spectrum"], f["xic"]
            print(
                f"{name:6} {i[0]:>10} {i[1]:>10,} {i[2] * 1e3:>7.1f} | {s[0]:>13g} "
                f"{s[1]:>9,.0f} {s[3]:>9,.0f} {s[2] * 1e3:>6.1f} | {x[0]:>8} {x[1]:>11,} "
                f"{x[2] * 1e3:>7.1f}"
            )
        for name in ("http", "s3"):
            f = figures[name]
            print(
                f"{name}: info {f['info'][1] / 1e6:.3f} MB of {size / 1e6:.1f} MB (goal <= 1 MB); "
                f"one spectrum: at most {f['spectrum_max_requests']} requests (goal <= 3), "
                f"at most {f['spectrum_max_ratio']:.2f}x its row group's bytes (goal <= 2x)"
            )
        if not args.no_convert:
            convert_throughput(source, bucket, endpoint, root, args.repeats)
            client = s3_client(endpoint)
            server_costs(source, bucket, root, lambda p, k: client.upload_file(str(p), bucket, k))
            on_s3rver(source, root, args.repeats)
    shutil.rmtree(root / "local-out.mzpeak", ignore_errors=True)
    if not args.no_cluster:
        cluster_reads(root)


if __name__ == "__main__":
    main()
