"""Staging folders that dead conversions left beside the outputs are swept with one listing of
each output folder per call, however many runs write there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from mzpeak_dask import ConvertOptions, convert_many
from mzpeak_dask.archive import staging
from mzpeak_dask.archive.staging import OWNER_LOCK, Staging, remove_held, sweep

from ..conftest import DATA, INLINE

TINY = DATA / "pyteomics" / "tiny.pwiz.1.1.mzML"


def _dead_staging(output: Path) -> Path:
    """A staging folder of ``output`` whose owner died: its lock file is there, unlocked."""
    folder = output.parent / f".{output.name}.abcd1234.tmp"
    folder.mkdir()
    (folder / OWNER_LOCK).write_text("pid 1 on a lost node")
    (folder / "archive.mzpeak").write_bytes(b"partial")
    return folder


def test_each_output_folder_is_listed_once_for_stale_staging(tmp_path, monkeypatch) -> None:
    out, other = tmp_path / "out", tmp_path / "other"
    out.mkdir()
    other.mkdir()
    jobs = [(TINY, out / f"run{k}.mzpeak") for k in range(4)] + [(TINY, other / "x.mzpeak")]
    dead = [_dead_staging(out / "run2.mzpeak"), _dead_staging(other / "x.mzpeak")]
    unrelated = _dead_staging(out / "not-an-output.mzpeak")  # swept by a batch, not here
    listed: list[Path] = []
    glob = Path.glob

    def counted(self: Path, pattern: str, *args, **kwargs):
        if pattern == ".*.tmp":
            listed.append(self)
        return glob(self, pattern, *args, **kwargs)

    monkeypatch.setattr(Path, "glob", counted)
    results = convert_many(jobs, ConvertOptions(), cluster=INLINE)
    monkeypatch.undo()
    assert [r.spectra for r in results] == [4] * 5
    assert sorted(listed) == [other, out]
    assert not any(folder.exists() for folder in dead)
    assert unrelated.exists()
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [unrelated.name] + [f"run{k}.mzpeak" for k in range(4)]
    )


def test_a_staging_folder_holding_only_its_lock_is_removed_without_a_walk(
    tmp_path, monkeypatch
) -> None:
    """What a run finished on a worker leaves: nothing but the lock, removed without a walk;
    a folder holding more is still removed whole, and its lock released."""
    walked: list[Path] = []
    rmtree = staging.shutil.rmtree
    monkeypatch.setattr(
        staging.shutil, "rmtree", lambda path, *a, **k: walked.append(path) or rmtree(path, *a, **k)
    )
    empty, full = Staging(tmp_path / "a.mzpeak"), Staging(tmp_path / "b.mzpeak")
    (full.path / "part-1.pkl5").write_bytes(b"part")
    (full.path / "finish").mkdir()
    (full.path / "finish" / "archive.mzpeak").write_bytes(b"archive")
    empty.cleanup()
    assert walked == [] and not empty.path.exists()
    full.cleanup()  # renamed out of the way first, then walked
    assert len(walked) == 1 and walked[0].name.startswith(".b.mzpeak.") and not full.path.exists()
    assert list(tmp_path.iterdir()) == [] and sweep(tmp_path) == []


def test_a_staging_folder_is_locked_on_itself_and_holds_only_what_is_written_in_it(
    tmp_path,
) -> None:
    """No lock file: the folder itself is locked (a file fewer to create and remove for each
    run). Another process's sweep leaves it while its owner lives, and removes it at once
    when the owner has died (a killed batch resumed right away)."""
    mine = Staging(tmp_path / "mine.mzpeak")
    assert list(mine.path.iterdir()) == []
    mine.cleanup()
    code = (
        "import sys; from pathlib import Path; "
        "from mzpeak_dask.archive.staging import Staging; "
        f"s = Staging(Path({str(tmp_path)!r}) / 'run.mzpeak'); "
        "(s.path / 'archive.mzpeak').write_bytes(b'partial'); "
        "print(s.path, flush=True); sys.stdin.read()"
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        folder = Path(owner.stdout.readline().strip())
        assert folder.name.startswith(".run.mzpeak.") and folder.name.endswith(".tmp")
        assert sweep(tmp_path) == [] and folder.is_dir()
    finally:
        os.kill(owner.pid, signal.SIGKILL)
        owner.communicate(timeout=60)  # reaps it and closes its pipes
    assert sweep(tmp_path) == [folder] and list(tmp_path.iterdir()) == []


def test_a_folder_left_before_it_was_renamed_is_swept_once_a_minute_old(tmp_path) -> None:
    """A process killed between creating its staging folder and renaming it to its ``.tmp``
    name leaves a ``.new`` folder: a sweep leaves it while it is young (its owner may be
    about to lock it) and removes it once older than the grace period, unless it is locked."""
    output = tmp_path / "run.mzpeak"
    young = tmp_path / ".run.mzpeak.abcd1234.new"
    old = tmp_path / ".run.mzpeak.efgh5678.new"
    for folder in (young, old):
        folder.mkdir()
    held = Staging(tmp_path / "held.mzpeak")
    locked = held.path.with_name(held.path.name[: -len(".tmp")] + ".new")
    os.rename(held.path, locked)  # a live owner's folder, before its rename
    past = os.stat(old).st_mtime - 2 * staging.UNLOCKED_GRACE_SECONDS
    for folder in (old, locked):
        os.utime(folder, (past, past))
    staging._LIVE.pop(str(held.path))
    assert sweep(tmp_path, output) == [old]
    assert young.is_dir() and not old.exists()
    code = (
        "import sys; from pathlib import Path; from mzpeak_dask.archive.staging import sweep; "
        f"print([p.name for p in sweep(Path({str(tmp_path)!r}))])"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() == "[]"  # the young one, and the one its owner holds, stay
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([young.name, locked.name])


def test_a_folder_a_cancelled_task_still_writes_in_is_removed_whole(tmp_path) -> None:
    """A batch stopped at its wall time removes the staging folders of its runs while tasks
    it cancelled may still be writing in them on the workers: the folder is renamed out of
    the way first, so that a task writing by the old path cannot fill it again, and nothing
    is left beside the outputs."""
    folder = Staging(tmp_path / "run.mzpeak")
    (folder.path / "part-0.pkl5").write_bytes(b"part")
    stop, refused = threading.Event(), []

    def task() -> None:  # a worker's task, writing part after part by the folder's path
        k = 0
        while not stop.is_set():
            k += 1
            try:
                (folder.path / f"part-{k}.pkl5").write_bytes(b"x" * 4096)
                (folder.path / f"finish-{k}").mkdir()
            except FileNotFoundError:
                refused.append(k)
            time.sleep(0)  # lets the removal run between writes (a worker is another process)

    writer = threading.Thread(target=task)
    writer.start()
    try:
        time.sleep(0.05)
        folder.cleanup()
        time.sleep(0.05)
    finally:
        stop.set()
        writer.join()
    assert refused  # the task met a folder that is gone
    assert list(tmp_path.iterdir()) == []
    assert sweep(tmp_path) == []


def test_the_folders_of_runs_that_never_ended_are_removed_once_their_call_stops(
    tmp_path,
) -> None:
    ended, left, other = (Staging(tmp_path / f"{n}.mzpeak") for n in ("ended", "left", "other"))
    (left.path / "finish").mkdir()
    (left.path / "part-0.pkl5").write_bytes(b"part")
    ended.cleanup()
    outputs = [tmp_path / "ended.mzpeak", tmp_path / "left.mzpeak"]
    assert remove_held(outputs) == [left.path]
    assert not left.path.exists() and other.path.exists()  # another call's: not this one's
    assert remove_held(outputs) == []
    other.cleanup()
    assert list(tmp_path.iterdir()) == []
