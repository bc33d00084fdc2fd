"""The per-process file cache behind the readers, the archive reader and the Zarr plumbing: one
opening per file version, a new one when the file changes, per thread where asked, evictions
closed."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from mzpeak_dask.storage.filecache import FileCache, per_file


def test_opened_once_per_file_version(tmp_path) -> None:
    path = tmp_path / "run.txt"
    path.write_text("one")
    opened = []

    @per_file(4)
    def read(p: str, upper: bool) -> str:
        opened.append(p)
        text = Path(p).read_text()
        return text.upper() if upper else text

    assert read(path, False) == "one" and read(str(path), False) == "one"
    assert read(path, True) == "ONE"  # other arguments: another entry
    assert len(opened) == 2
    path.write_text("second")  # written again (another size): opened again
    assert read(path, False) == "second" and len(opened) == 3
    stamp = path.stat().st_mtime_ns
    path.write_text("others")  # same size, another time
    os.utime(path, ns=(stamp + 10**9, stamp + 10**9))
    assert read(path, False) == "others" and len(opened) == 4


def test_a_marker_file_stands_for_its_folder(tmp_path) -> None:
    (tmp_path / "zarr.json").write_text("{}")
    cache = FileCache(lambda p: object(), 4, marker="zarr.json")
    first = cache(tmp_path)
    assert cache(tmp_path) is first
    (tmp_path / "zarr.json").write_text('{"changed": 1}')
    assert cache(tmp_path) is not first


def test_least_recently_used_are_closed(tmp_path) -> None:
    closed = []
    cache = FileCache(lambda p: p, 2, close=closed.append)
    paths = []
    for k in range(3):
        paths.append(tmp_path / f"{k}")
        paths[-1].write_text(str(k))
    cache(paths[0]), cache(paths[1]), cache(paths[0]), cache(paths[2])
    assert closed == [str(paths[1])]  # 0 was used again after 1
    cache.clear()
    assert sorted(closed) == sorted(map(str, paths))


def test_one_cache_per_thread_when_asked(tmp_path) -> None:
    path = tmp_path / "archive"
    path.write_text("x")
    cache = FileCache(lambda p: object(), 4, per_thread=True)
    here = cache(path)
    there = []
    thread = threading.Thread(target=lambda: there.append(cache(path)))
    thread.start()
    thread.join()
    assert cache(path) is here and there[0] is not here
