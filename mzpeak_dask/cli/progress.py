"""Progress a user can see: a one-line bar on a terminal, plain log lines elsewhere."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from ..support.pathtext import text


class ProgressReporter:
    """Callback ``(input, done, total)`` for :func:`mzpeak_dask.convert_many`.

    On a terminal it redraws one line (items converted, files finished); otherwise it writes a
    line per file every ``log_every`` seconds and when a file completes, which reads well in a
    batch job's log.
    """

    def __init__(self, files: int, stream: TextIO | None = None, log_every: float = 10.0):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.files = files
        self.state: dict[str, tuple[int, int]] = {}
        self.finished: set[str] = set()
        self.log_every = log_every
        self._last_log: dict[str, float] = {}
        self.started = time.monotonic()

    def announce(self, message: str) -> None:
        """A one-off line, e.g. the dashboard address (terminals only: logs stay terse)."""
        if self.tty:
            self.stream.write(message + "\n")
            self.stream.flush()

    def step(self, what: str, done: int, total: int, unit: str) -> None:
        """A step before the conversions (``checked 500/10,000 URLs``): redrawn on a terminal,
        else a line every ``log_every`` seconds and one when it ends."""
        now = time.monotonic()
        if not self.tty and done < total and now - self._last_log.get(what, 0.0) < self.log_every:
            return
        self._last_log[what] = now
        end = "\n" if done >= total or not self.tty else ""
        self.stream.write(f"{'\r' if self.tty else ''}{what} {done:,}/{total:,} {unit}{end}")
        self.stream.flush()

    def __call__(self, source: str, done: int, total: int) -> None:
        if source in self.finished:
            return
        self.state[source] = (done, total)
        if done >= total:
            self.finished.add(source)
        if self.tty:
            self._draw()
        else:
            self._log(source, done, total)

    def _draw(self) -> None:
        done = sum(d for d, _ in self.state.values())
        total = sum(t for _, t in self.state.values()) or 1
        width = 30
        filled = int(width * done / total)
        bar = "#" * filled + "-" * (width - filled)
        rate = done / max(time.monotonic() - self.started, 1e-9)
        files = f" files {len(self.finished)}/{self.files}" if self.files > 1 else ""
        self.stream.write(f"\r[{bar}] {done:,}/{total:,} items{files} {rate:,.0f}/s ")
        self.stream.flush()

    def _log(self, source: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self._last_log.get(source, 0.0) < self.log_every:
            return
        self._last_log[source] = now
        state = "done" if done >= total else "converting"
        self.stream.write(
            f"{state} {text(source)}: {done:,}/{total:,} items "
            f"({len(self.finished)}/{self.files} files finished)\n"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self.state:
            self.stream.write("\n")
            self.stream.flush()
