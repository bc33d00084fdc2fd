"""What a batch leaves beside its outputs: ``batch_report.json`` (every input, for machines),
``batch_report.html`` (the batch at a glance) and ``catalog.parquet`` (one row per archive, for
pandas, DuckDB or dask.dataframe).

All three are valid UTF-8 whatever the file names: paths are written as readable text (a byte
that is not UTF-8 shown as ``\\xNN``) and, in the JSON report and the catalog, also as exact
``file:`` URIs (see :mod:`mzpeak_dask.support.pathtext`)."""

from __future__ import annotations

import html
import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .._version import __version__
from ..read.inspection import describe
from ..support.pathtext import text, uri
from ..support.real_paths import RealPaths
from .state import CONVERTED, FAILED, FIELDS, PENDING, SKIPPED

REPORT_JSON = "batch_report.json"
REPORT_HTML = "batch_report.html"
CATALOG = "catalog.parquet"
NAMES = [REPORT_JSON, REPORT_HTML, CATALOG]  # what a batch writes beside its archives
# per input in batch_report.json: the state's record without the TIC thumbnail (drawn in the
# HTML report) and the time it finished (plotted there as throughput)
_REPORTED = tuple(f for f in FIELDS if f not in ("tic", "finished_at", "catalog"))


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
    if fields.get("error"):  # it may name a URL, whose password is hidden
        fields["error"] = text(fields["error"])
    if fields.get("warnings"):
        fields["warnings"] = [text(w) for w in fields["warnings"]]
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
# Charts are drawn as inline SVG (a few milliseconds for thousands of runs; plotting with
# matplotlib cost the coordinator about half a second of CPU for every report it wrote).
_W, _H, _PAD = 640, 200, 40


def _scaled(values: np.ndarray, size: float) -> np.ndarray:
    low, high = float(values.min()), float(values.max())
    return (values - low) / ((high - low) or 1.0) * size


def _svg(body: str, x_label: str, y_label: str, top: float, right: str = "") -> str:
    """A chart frame: axes, their labels and the top value of the y axis."""
    x0, y0 = _PAD, _H - _PAD
    return (
        f'<svg width="{_W + _PAD}" height="{_H}" viewBox="0 0 {_W + _PAD} {_H}" font-size="11">'
        f'<path d="M{x0},{_PAD / 2} V{y0} H{_W}" fill="none" stroke="#444"/>{body}'
        f'<text x="{(x0 + _W) / 2}" y="{_H - 8}" text-anchor="middle">{x_label}</text>'
        f'<text x="4" y="{_PAD / 2 - 6}">{y_label} (top {top:.3g})</text>{right}</svg>'
    )


def _polyline(x: np.ndarray, y: np.ndarray, colour: str) -> str:
    points = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x.tolist(), y.tolist(), strict=True))
    return f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{points}"/>'


def _ratio_chart(done: list[dict[str, Any]]) -> str:
    ratios = np.array([(r.get("output_bytes") or 0) / r["input_bytes"] for r in done])
    top = float(ratios.max()) or 1.0
    width = (_W - _PAD) / len(ratios)
    heights = ratios / top * (_H - 1.5 * _PAD)
    bar = max(width - 1, 0.5)
    bars = "".join(
        f'<rect x="{_PAD + k * width:.1f}" y="{_H - _PAD - h:.1f}" width="{bar:.1f}" '
        f'height="{h:.1f}" fill="#4a7ab5"/>'
        for k, h in enumerate(heights.tolist())
    )
    return _svg(bars, "file", "output / input size", top)


def _throughput_chart(timed: list[tuple[float, int]], start: float) -> str:
    elapsed = np.array([t for t, _ in timed]) - start
    files = np.arange(1, len(timed) + 1, dtype=float)
    megabytes = np.cumsum([b for _, b in timed]) / 1e6
    x = _PAD + _scaled(np.concatenate([[0.0], elapsed]), _W - _PAD)[1:]
    height = _H - 1.5 * _PAD
    y_files = _H - _PAD - files / files.max() * height
    y_mb = _H - _PAD - megabytes / (megabytes.max() or 1.0) * height
    steps_x = np.repeat(x, 2)[1:]  # a step after each file
    steps_y = np.repeat(y_files, 2)[:-1]
    body = _polyline(steps_x, steps_y, "#4a7ab5") + _polyline(x, y_mb, "#c0504d")
    right = (
        f'<text x="{_W}" y="{_PAD / 2 - 6}" text-anchor="end" fill="#c0504d">'
        f"input MB converted (top {megabytes.max():.3g})</text>"
    )
    return _svg(body, f"seconds (last {elapsed.max():.3g})", "files converted", files.max(), right)


def _plots(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    done = [r for r in records if r["status"] in (CONVERTED, SKIPPED) and r.get("input_bytes")]
    out = []
    if done:
        out.append(("Output size / input size per file", _ratio_chart(done)))
    timed = sorted(
        (r["finished_at"], r.get("input_bytes") or 0)
        for r in records
        if r["status"] == CONVERTED and r.get("finished_at")
    )
    if timed:
        start = min(t for t, _ in timed) - max(
            (r.get("seconds") or 0) for r in records if r["status"] == CONVERTED
        )
        out.append(("Throughput over time", _throughput_chart(timed, start)))
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
    for title, svg in _plots(records):
        parts.append(f"<h2>{html.escape(title)}</h2><figure class=plot>{svg}</figure>")
    failures = [r for r in records if r["status"] in (FAILED, PENDING)]
    if failures:
        parts.append("<h2>Failures</h2><table><tr><th>input</th><th>reason</th></tr>")
        parts += [
            f"<tr><td>{html.escape(text(r['input']))}</td><td class=failed>"
            f"{html.escape(text(r.get('error') or ''))}</td></tr>"
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
    """The catalog's row of a converted record, from what the check of its archive recorded
    (:func:`~mzpeak_dask.read.inspection.describe`); the archive (a path or URL) is opened only
    for a record made before the check recorded it."""
    url = "://" in str(record["output"])
    path = record["output"] if url else Path(record["output"])
    if not url and not path.exists():
        return None
    described = record.get("catalog") or describe(path)
    return {
        "source": text(record["input"]),
        "archive": text(record["output"]),
        "source_uri": uri(record["input"]),
        "archive_uri": uri(record["output"]),
        **{k: described[k] for k in _DESCRIBED[:6]},
        "chromatograms": record.get("chromatograms"),
        **{k: described[k] for k in _DESCRIBED[6:]},
        "points": record.get("points"),
        "input_bytes": record.get("input_bytes"),
        "archive_bytes": record.get("output_bytes"),
        "input_sha256": record.get("input_sha256"),
        "member_sha256": json.dumps(record.get("members") or {}, sort_keys=True),
    }


# the catalog's columns that describe() gives, in the catalog's order
_DESCRIBED = (
    "instrument",
    "spectra",
    "ms1_spectra",
    "ms2_spectra",
    "msn_spectra",
    "ms_levels",
    "rt_min",
    "rt_max",
    "mz_min",
    "mz_max",
)


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
    real = RealPaths()  # each folder resolved once; a record's path twice, from that
    latest = {}
    for r in sorted(done, key=lambda r: r.get("finished_at") or 0.0):
        latest[real(r["output"])] = r["input"]
    chosen = [r for r in done if latest[real(r["output"])] == r["input"]]
    rows = [row for r in chosen for row in [catalog_row(r)] if row is not None]
    table = pa.Table.from_pylist(rows, schema=CATALOG_SCHEMA)
    path = output_dir / CATALOG
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)
    return path
