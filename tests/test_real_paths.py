"""The real paths of a batch's inputs and outputs, each folder resolved once, are
``os.path.realpath``'s, whatever links the tree holds."""

from __future__ import annotations

import os

from mzpeak_dask.support.real_paths import RealPaths


def _tree(root) -> list[str]:
    """Files, a linked file, a linked folder, a link to a link, a dangling link, ``..``."""
    (root / "runs" / "day1").mkdir(parents=True)
    (root / "elsewhere").mkdir()
    (root / "runs" / "day1" / "a.mzML").write_text("a")
    (root / "elsewhere" / "b.mzML").write_text("b")
    os.symlink(root / "elsewhere" / "b.mzML", root / "runs" / "day1" / "b.mzML")
    os.symlink(root / "elsewhere", root / "runs" / "linked")
    os.symlink(root / "runs" / "day1" / "b.mzML", root / "runs" / "day1" / "c.mzML")
    os.symlink(root / "gone.mzML", root / "runs" / "day1" / "d.mzML")
    names = ["a.mzML", "b.mzML", "c.mzML", "d.mzML", "missing.mzML", ".", ".."]
    paths = [str(root / "runs" / "day1" / n) for n in names]
    paths += [str(root / "runs" / "linked" / "b.mzML"), str(root / "runs" / "linked" / "x")]
    paths += [str(root / "runs" / "day1" / ".." / "day1" / "a.mzML"), str(root / "runs")]
    return paths


def test_each_path_resolves_as_realpath_does(tmp_path, monkeypatch) -> None:
    paths = _tree(tmp_path)
    monkeypatch.chdir(tmp_path / "runs")
    paths += ["day1/a.mzML", "day1/b.mzML", "linked/b.mzML", "a.mzML", "../elsewhere/b.mzML"]
    real = RealPaths()
    for _ in range(2):  # the second time from the folders resolved the first
        assert [real(p) for p in paths] == [os.path.realpath(p) for p in paths]


def test_a_folder_is_resolved_once_for_all_its_files(tmp_path, monkeypatch) -> None:
    (tmp_path / "runs").mkdir()
    resolved: list[str] = []
    realpath = os.path.realpath

    def counted(path, *args, **kwargs):
        resolved.append(os.fspath(path))
        return realpath(path, *args, **kwargs)

    monkeypatch.setattr(os.path, "realpath", counted)
    real = RealPaths()
    paths = [tmp_path / "runs" / f"{k}.mzML" for k in range(50)]
    assert [real(p) for p in paths] == [
        os.path.join(realpath(tmp_path), "runs", p.name) for p in paths
    ]
    assert resolved == [str(tmp_path / "runs")]
