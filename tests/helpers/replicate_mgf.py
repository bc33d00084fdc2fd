"""Build a large MGF by replicating a real one ("synthetic by replication"), for the tests and
the benchmarks.

The file-level parameters (before the first ``BEGIN IONS``) are kept once; the spectra are
repeated, each copy's titles suffixed with ``.copyN`` and its ``RTINSECONDS`` shifted past the
previous copy, so every spectrum stays distinct.

    python -m tests.helpers.replicate_mgf SOURCE.mgf OUTPUT.mgf --target-mb 100
"""

from __future__ import annotations

import re
from pathlib import Path

from .replicate import command

_FIRST = re.compile(rb"^[ \t]*BEGIN IONS", re.M)
_TITLE = re.compile(rb"^(TITLE=[^\r\n]*)", re.M)
_RT = re.compile(rb"^(RTINSECONDS=)([^\r\n]*)", re.M)


def replicate_mgf(source: Path, output: Path, copies: int) -> int:
    """Write the header of ``source`` and ``copies`` copies of its spectra to ``output``;
    returns its size."""
    text = source.read_bytes()
    first = _FIRST.search(text)
    head, body = text[: first.start()], text[first.start() :]
    if not body.endswith(b"\n"):
        body += b"\n"
    times = [float(m.group(2)) for m in _RT.finditer(body)]
    span = (max(times) if times else 0.0) + 1.0
    with open(output, "wb") as out:
        out.write(head)
        for copy in range(copies):
            if copy == 0:
                out.write(body)
                continue
            out.write(_copied(body, copy, copy * span))
    return output.stat().st_size


def _copied(body: bytes, copy: int, shift: float) -> bytes:
    suffix = b".copy%d" % copy
    body = _TITLE.sub(lambda m: m.group(1) + suffix, body)
    return _RT.sub(lambda m: m.group(1) + repr(float(m.group(2)) + shift).encode(), body)


def main() -> None:
    command(replicate_mgf, __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
