"""A lock whose file its owner removes on release still admits one holder at a time: a
process that opened the file just before it was removed takes the path again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mzpeak_dask.support.locks import try_lock

CONTENDER = """
import os, sys
from pathlib import Path
from mzpeak_dask.support.locks import try_lock
path, inside, rounds = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
held = clashes = 0
for _ in range(rounds):
    lock = try_lock(path)
    if lock is None:
        continue
    held += 1
    try:
        os.close(os.open(inside, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:  # another process holds the lock at the same time
        clashes += 1
    else:
        os.unlink(inside)
    lock.release(remove=True)
print(held, clashes)
"""


def test_one_holder_at_a_time_when_the_file_goes_on_release(tmp_path) -> None:
    path, inside = tmp_path / "prefix.lock", tmp_path / "inside"
    command = [sys.executable, "-c", CONTENDER, str(path), str(inside), "20000"]
    contenders = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(3)]
    results = [tuple(map(int, p.communicate(timeout=300)[0].split())) for p in contenders]
    assert all(p.returncode == 0 for p in contenders)
    assert all(held > 0 for held, _ in results), results
    assert sum(clashes for _, clashes in results) == 0, results
    assert not path.exists()


def test_released_with_remove_leaves_no_file_and_can_be_taken_again(tmp_path: Path) -> None:
    path = tmp_path / "a.lock"
    first = try_lock(path, "first")
    assert first is not None and path.read_text() == "first"
    assert try_lock(path) is None  # held
    first.release(remove=True)
    assert not path.exists()
    second = try_lock(path, "second")
    assert second is not None and path.read_text() == "second"
    second.release()
    assert path.exists()  # kept unless asked
