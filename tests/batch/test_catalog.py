"""The catalog is written from what each run's check recorded (on the worker that finished
it), not by opening every archive again on the coordinator."""

from __future__ import annotations

import sqlite3

from mzpeak_dask import convert
from mzpeak_dask.batch.report import catalog_row
from mzpeak_dask.batch.state import STATE_FILE, BatchState
from mzpeak_dask.read.inspection import inspect_output

from ..conftest import BUNDLED, INLINE


def _record(tmp_path) -> dict:
    archive = tmp_path / "small.mzpeak"
    result = convert(BUNDLED / "small.mzML", archive, cluster=INLINE)
    inspection = inspect_output(str(archive))
    assert inspection["errors"] == []
    return {
        "input": str(BUNDLED / "small.mzML"),
        "output": str(archive),
        "status": "converted",
        "input_sha256": result.input_sha256,
        "input_bytes": result.input_bytes,
        "output_bytes": result.output_bytes,
        "spectra": result.spectra,
        "chromatograms": result.chromatograms,
        "points": result.points,
        "members": inspection["members"],
        "catalog": inspection["catalog"],
    }


def test_a_catalog_row_comes_from_the_recorded_description(tmp_path) -> None:
    record = _record(tmp_path)
    row = catalog_row(record)
    assert row == catalog_row({**record, "catalog": {}})  # as read from the archive itself
    assert (row["spectra"], row["ms1_spectra"], row["ms2_spectra"]) == (48, 14, 34)
    assert row["rt_max"] > row["rt_min"] and row["mz_max"] > row["mz_min"]
    (tmp_path / "small.mzpeak").write_bytes(b"no longer an archive")
    assert catalog_row(record) == row  # not opened again


def test_a_state_written_before_descriptions_were_recorded_takes_them(tmp_path) -> None:
    old = sqlite3.connect(tmp_path / STATE_FILE)
    old.execute(
        "CREATE TABLE files (input TEXT PRIMARY KEY, output TEXT NOT NULL, status TEXT NOT "
        "NULL, error TEXT, input_sha256 TEXT, input_bytes INTEGER, output_bytes INTEGER, "
        "spectra INTEGER, chromatograms INTEGER, points INTEGER, seconds REAL, attempts "
        "INTEGER NOT NULL DEFAULT 0, finished_at REAL, members TEXT, warnings TEXT, tic TEXT)"
    )
    old.execute("INSERT INTO files (input, output, status) VALUES ('/a.mzML', '/a.mzpeak', 'x')")
    old.commit()
    old.close()
    record = _record(tmp_path)
    state = BatchState(tmp_path)
    assert state.get("/a.mzML")["catalog"] == {}
    state.put(record)
    assert state.get(record["input"])["catalog"] == record["catalog"]
    state.close()
