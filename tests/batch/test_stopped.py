"""A batch that stops early, for whatever reason, still accounts for every input: finished
outputs stay and are recorded, every other input is reported (and stored) as pending."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mzpeak_dask.batch.runner import run_batch
from mzpeak_dask.batch.state import BatchState
from mzpeak_dask.options import ClusterOptions

from ..conftest import BUNDLED
from ..helpers.replicate import replicate

INLINE = ClusterOptions(cluster="inline")


class _StopAfter:
    """A progress display that fails once ``runs`` inputs have finished."""

    def __init__(self, runs: int, error: BaseException):
        self.runs, self.error, self.finished = runs, error, set()

    def __call__(self, source: str, done: int, total: int) -> None:
        if done == total:
            self.finished.add(source)
        if len(self.finished) > self.runs:
            raise self.error


def _tree(folder: Path, runs: int) -> Path:
    folder.mkdir()
    for k in range(runs):
        replicate(BUNDLED / "small.mzML", folder / f"run{k}.mzML", copies=1)
    return folder


@pytest.mark.slow  # five replicated runs, one converted before the stop
@pytest.mark.parametrize(
    "error", [RuntimeError("display lost its terminal"), KeyboardInterrupt()], ids=repr
)
def test_a_batch_stopped_early_reports_every_input(tmp_path, error) -> None:
    source = _tree(tmp_path / "repository", 5)
    output = tmp_path / "out"
    with pytest.raises(type(error)):
        run_batch(source, output, cluster=INLINE, progress=_StopAfter(1, error))
    doc = json.loads((output / "batch_report.json").read_text())
    statuses = {Path(f["input"]).name: f["status"] for f in doc["files"]}
    assert sorted(statuses) == [f"run{k}.mzML" for k in range(5)]
    converted = list(statuses.values()).count("converted")
    assert converted >= 1  # the runs recorded before the display failed, their outputs kept
    assert list(statuses.values()).count("pending") == 5 - converted
    assert doc["interrupted"] is isinstance(error, KeyboardInterrupt)
    state = BatchState(output)
    try:
        stored = {Path(r["input"]).name: r for r in state.all()}
    finally:
        state.close()
    assert {name: r["status"] for name, r in stored.items()} == statuses
    pending = [r for r in stored.values() if r["status"] == "pending"]
    why = "interrupted" if isinstance(error, KeyboardInterrupt) else "display lost its terminal"
    assert all(why in r["error"] for r in pending)
    for r in pending:
        assert not Path(r["output"]).exists()
    for r in stored.values():
        if r["status"] == "converted":
            assert Path(r["output"]).is_file()
    assert not [p for p in output.rglob("*") if p.name.endswith(".tmp")]
