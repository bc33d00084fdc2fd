"""The durable state of a batch: one SQLite file in the output folder, written as each input
ends, so a crash, a kill or a wall-time limit loses nothing that was finished. State files are
readable by their owner only (:func:`owner_only`): they name inputs, which may be URLs.

Inputs are known by their absolute path. A path that is not UTF-8 (see
:mod:`mzpeak_dask.support.pathtext`) is stored as a BLOB of its exact bytes, other paths as TEXT as
always, so each reads back as the path it was."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ..support.pathtext import is_utf8

STATE_FILE = "batch_state.sqlite"
CONVERTED, SKIPPED, FAILED, PENDING = "converted", "skipped", "failed", "pending"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
    input TEXT PRIMARY KEY,
    output TEXT NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    input_sha256 TEXT,
    input_bytes INTEGER,
    output_bytes INTEGER,
    spectra INTEGER,
    chromatograms INTEGER,
    points INTEGER,
    seconds REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    finished_at REAL,
    members TEXT,
    warnings TEXT,
    tic TEXT,
    catalog TEXT
)
"""
_ADDED = {"catalog": "TEXT"}  # columns a state written by an older version lacks
FIELDS = (
    "input",
    "status",
    "output",
    "error",
    "input_sha256",
    "input_bytes",
    "output_bytes",
    "spectra",
    "chromatograms",
    "points",
    "seconds",
    "attempts",
    "finished_at",
    "members",
    "warnings",
    "tic",
    "catalog",
)
_JSON = {"members": dict, "warnings": list, "tic": list, "catalog": dict}
_PATHS = ("input", "output")


def _stored_path(path: str) -> str | bytes:
    return path if is_utf8(path) else os.fsencode(path)


def _read_path(value: str | bytes) -> str:
    return os.fsdecode(value) if isinstance(value, bytes) else value


@contextlib.contextmanager
def owner_only(path: Path) -> Iterator[BinaryIO]:
    """``path`` opened to be written anew, readable and writable by its owner only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # a file that was there keeps its mode otherwise
    with os.fdopen(fd, "wb") as f:
        yield f


class BatchState:
    def __init__(self, output_dir: Path):
        output_dir.mkdir(parents=True, exist_ok=True)
        self.path = output_dir / STATE_FILE
        if not self.path.exists():  # SQLite gives its journal the file's own mode
            with owner_only(self.path):
                pass
        self.db = sqlite3.connect(self.path)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute(_SCHEMA)
        present = {row[1] for row in self.db.execute("PRAGMA table_info(files)")}
        for column, kind in _ADDED.items():
            if column not in present:
                self.db.execute(f"ALTER TABLE files ADD COLUMN {column} {kind}")
        self.db.commit()

    def get(self, input: str) -> dict[str, Any] | None:
        row = self.db.execute(
            f"SELECT {', '.join(FIELDS)} FROM files WHERE input = ?", (_stored_path(input),)
        ).fetchone()
        return None if row is None else self._decode(row)

    def all(self) -> list[dict[str, Any]]:
        rows = self.db.execute(f"SELECT {', '.join(FIELDS)} FROM files ORDER BY input")
        return [self._decode(r) for r in rows]

    @staticmethod
    def _decode(row: tuple) -> dict[str, Any]:
        record = dict(zip(FIELDS, row, strict=True))
        for key in _PATHS:
            record[key] = _read_path(record[key])
        for key, empty in _JSON.items():
            record[key] = json.loads(record[key]) if record[key] else empty()
        return record

    def put(self, record: dict[str, Any]) -> None:
        """Insert or replace one input's record and commit it at once."""
        values = dict(record)
        values.setdefault("finished_at", time.time())
        for key in _JSON:
            if key in values and not isinstance(values[key], str):
                values[key] = json.dumps(values[key])
        for key in _PATHS:
            values[key] = _stored_path(values[key])
        columns = [f for f in FIELDS if f in values]
        self.db.execute(
            f"INSERT OR REPLACE INTO files ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' for _ in columns)})",
            [values[c] for c in columns],
        )
        self.db.commit()

    def close(self) -> None:
        self.db.close()
