"""What a batch leaves beside its outputs: ``batch_report.json`` (every input, for machines),
``batch_report.html`` (the batch at a glance) and ``catalog.parquet`` (one row per archive, for
pandas, DuckDB or dask.dataframe).

All three are valid UTF-8 whatever the file names: paths are written as readable text (a byte
that is not UTF-8 shown as ``\\xNN``) and, in the JSON report and the catalog, also as exact
``file:`` URIs (see :mod:`mzpeak_dask.pathtext`)."""

from __future__ import annotations

import base64
import html
import io
import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .. import vocabulary as V
from .._version import __version__
from ..pathtext import text, uri
from .state import CONVERTED, FAILED, FIELDS, PENDING, SKIPPED

REPORT_JSON = "batch_report.json"
REPORT_HTML = "batch_report.html"
CATALOG = "catalog.parquet"
# per input in batch_report.json: the state's record without the TIC thumbnail (drawn in the
# HTML report) and the time it finished (plotted there as throughput)
_REPORTED = tuple(f for f in FIELDS if f not in ("tic", "finished_at"))


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def summary(records: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    counts = Counter(r["status"] for r in records)
    converted = [r for r in records if r["status"] == CONVERTED]
    mb = sum(r.get("input_bytes") or 0 for r in converted) / 1e6
    return {
        "files": len(records),
        **{status: counts.get(status, 0) for status in (CONVERTED, SKIPPED, FAILED, PENDING)},
        "seconds": round(seconds, 3),
        "input_megabytes_converted": round(mb, 3),
        "files_per_hour": round(len(converted) / seconds * 3600, 1) if seconds else None,
        "megabytes_per_second": round(mb / seconds, 3) if seconds else None,
    }


def _reported(record: dict[str, Any]) -> dict[str, Any]:
    fields = {k: record.get(k) for k in _REPORTED}
    for key in ("input", "output"):
        fields[key] = text(record[key])
        fields[f"{key}_uri"] = uri(record[key])
    return fields


def write_json(
    output_dir: Path, records: list[dict[str, Any]], seconds: float, interrupted: bool
) -> Path:
    doc = {
        "software": {"name": "mzpeak_dask", "version": __version__},
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "interrupted": interrupted,
        "summary": summary(records, seconds),
        "files": [_reported(r) for r in records],
    }
    path = output_dir / REPORT_JSON
    _atomic_write(path, json.dumps(doc, indent=2).encode())
    return path


# -- HTML -----------------------------------------------------------------------------------------
def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode()


def _plots(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [r for r in records if r["status"] in (CONVERTED, SKIPPED) and r.get("input_bytes")]
    out = []
    if done:
        figure, axis = plt.subplots(figsize=(7, 2.6))
        ratios = [(r.get("output_bytes") or 0) / r["input_bytes"] for r in done]
        axis.bar(range(len(done)), ratios, color="#4a7ab5")
        axis.set_xlabel("file")
        axis.set_ylabel("output / input size")
        out.append(("Output size / input size per file", _png(figure)))
        plt.close(figure)
    timed = sorted(
        (r["finished_at"], r.get("input_bytes") or 0)
        for r in records
        if r["status"] == CONVERTED and r.get("finished_at")
    )
    if timed:
        start = min(t for t, _ in timed) - max(
            (r.get("seconds") or 0) for r in records if r["status"] == CONVERTED
        )
        figure, axis = plt.subplots(figsize=(7, 2.6))
        elapsed = [t - start for t, _ in timed]
        cumulative = [sum(b for _, b in timed[: k + 1]) / 1e6 for k in range(len(timed))]
        axis.step(elapsed, range(1, len(timed) + 1), where="post", label="files")
        axis.set_xlabel("seconds")
        axis.set_ylabel("files converted")
        twin = axis.twinx()
        twin.plot(elapsed, cumulative, color="#c0504d", label="MB")
        twin.set_ylabel("input MB converted")
        out.append(("Throughput over time", _png(figure)))
        plt.close(figure)
    return out


def _sparkline(tic: list[list[float]], width: int = 160, height: int = 36) -> str:
    if len(tic) < 2:
        return "<span class=muted>no TIC</span>"
    times = [t for t, _ in tic]
    values = [v for _, v in tic]
    t0, t1 = min(times), max(times) or 1.0
    top = max(values) or 1.0
    span = (t1 - t0) or 1.0
    points = " ".join(
        f"{(t - t0) / span * width:.1f},{height - v / top * height:.1f}" for t, v in tic
    )
    return (
        f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f'<polyline fill="none" stroke="#4a7ab5" stroke-width="1" points="{points}"/></svg>'
    )


def write_html(output_dir: Path, records: list[dict[str, Any]], seconds: float) -> Path:
    s = summary(records, seconds)
    parts = [
        "<!doctype html><meta charset=utf-8><title>mzpeak_dask batch report</title>"
        "<style>body{font:14px sans-serif;margin:2em}td,th{padding:2px 8px;text-align:left}"
        "tr:nth-child(even){background:#f4f4f4}.failed{color:#b00}.muted{color:#888}"
        "</style><h1>mzpeak_dask batch report</h1>",
        f"<p>{s['files']} files: {s[CONVERTED]} converted, {s[SKIPPED]} skipped (up to "
        f"date), {s[FAILED]} failed, {s[PENDING]} pending &middot; {s['seconds']:.1f} s "
        f"&middot; {s['files_per_hour'] or 0:.0f} files/hour &middot; "
        f"{s['megabytes_per_second'] or 0:.2f} MB/s</p>",
    ]
    for title, png in _plots(records):
        parts.append(f"<h2>{html.escape(title)}</h2><img src='data:image/png;base64,{png}'>")
    failures = [r for r in records if r["status"] in (FAILED, PENDING)]
    if failures:
        parts.append("<h2>Failures</h2><table><tr><th>input</th><th>reason</th></tr>")
        parts += [
            f"<tr><td>{html.escape(text(r['input']))}</td><td class=failed>"
            f"{html.escape(r.get('error') or '')}</td></tr>"
            for r in failures
        ]
        parts.append("</table>")
    parts.append(
        "<h2>Runs</h2><table><tr><th>input</th><th>status</th><th>spectra</th>"
        "<th>output / input</th><th>TIC</th></tr>"
    )
    for r in records:
        ratio = (
            (r.get("output_bytes") or 0) / r["input_bytes"]
            if r.get("input_bytes") and r.get("output_bytes")
            else None
        )
        parts.append(
            f"<tr><td>{html.escape(text(r['input']))}</td><td>{r['status']}</td>"
            f"<td>{r.get('spectra') or ''}</td>"
            f"<td>{'' if ratio is None else f'{ratio:.2f}'}</td>"
            f"<td>{_sparkline(r.get('tic') or [])}</td></tr>"
        )
    parts.append("</table>")
    path = output_dir / REPORT_HTML
    _atomic_write(path, "\n".join(parts).encode())
    return path


# -- catalog --------------------------------------------------------------------------------------
def catalog_row(record: dict[str, Any]) -> dict[str, Any] | None:
    from ..read.archive import open_archive
    from ..read.metadata import find_column

    path = record["output"] if "://" in str(record["output"]) else Path(record["output"])
    if isinstance(path, Path) and not path.exists():
        return None
    with open_archive(path) as archive:
        tables = archive.tables_of(V.SPECTRUM)
        levels = Counter(level for level in tables.ms_levels if level is not None)
        times = [t for t in tables.times if t is not None]
        spectra = archive.spectra
        low = find_column(spectra.column_names, V.LOWEST_OBSERVED_MZ)
        high = find_column(spectra.column_names, V.HIGHEST_OBSERVED_MZ)
        instruments = [
            ", ".join(str(p.get("name")) for p in ic.get("parameters", []))
            for ic in archive.file_metadata.get("instrument_configuration_list", [])
        ]
        mz_low = pc.min(spectra.column(low)).as_py() if low else None
        mz_high = pc.max(spectra.column(high)).as_py() if high else None
    return {
        "source": text(record["input"]),
        "archive": text(record["output"]),
        "source_uri": uri(record["input"]),
        "archive_uri": uri(record["output"]),
        "instrument": "; ".join(dict.fromkeys(i for i in instruments if i)),
        "spectra": len(tables),
        "ms1_spectra": levels.get(1, 0),
        "ms2_spectra": levels.get(2, 0),
        "msn_spectra": sum(v for k, v in levels.items() if k >= 3),
        "ms_levels": json.dumps({str(k): v for k, v in sorted(levels.items())}),
        "chromatograms": record.get("chromatograms"),
        "rt_min": min(times) if times else None,
        "rt_max": max(times) if times else None,
        "mz_min": mz_low,
        "mz_max": mz_high,
        "points": record.get("points"),
        "input_bytes": record.get("input_bytes"),
        "archive_bytes": record.get("output_bytes"),
        "input_sha256": record.get("input_sha256"),
        "member_sha256": json.dumps(record.get("members") or {}, sort_keys=True),
    }


CATALOG_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("archive", pa.string()),
        ("source_uri", pa.string()),
        ("archive_uri", pa.string()),
        ("instrument", pa.string()),
        ("spectra", pa.int64()),
        ("ms1_spectra", pa.int64()),
        ("ms2_spectra", pa.int64()),
        ("msn_spectra", pa.int64()),
        ("ms_levels", pa.string()),
        ("chromatograms", pa.int64()),
        ("rt_min", pa.float64()),
        ("rt_max", pa.float64()),
        ("mz_min", pa.float64()),
        ("mz_max", pa.float64()),
        ("points", pa.int64()),
        ("input_bytes", pa.int64()),
        ("archive_bytes", pa.int64()),
        ("input_sha256", pa.string()),
        ("member_sha256", pa.string()),
    ]
)


def write_catalog(output_dir: Path, state_records: list[dict[str, Any]]) -> Path:
    """One row per archive the batch has produced so far (this run and earlier ones; for an
    archive recorded under two names, e.g. by an older version, the latest record)."""
    done = [r for r in state_records if r["status"] in (CONVERTED, SKIPPED)]
    latest = {}
    for r in sorted(done, key=lambda r: r.get("finished_at") or 0.0):
        latest[os.path.realpath(r["output"])] = r["input"]
    chosen = [r for r in done if latest[os.path.realpath(r["output"])] == r["input"]]
    rows = [row for r in chosen for row in [catalog_row(r)] if row is not None]
    table = pa.Table.from_pylist(rows, schema=CATALOG_SCHEMA)
    path = output_dir / CATALOG
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return path
