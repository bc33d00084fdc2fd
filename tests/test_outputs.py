"""Where ``convert`` writes: never over its input, an existing archive folder is an archive,
temporary folders of dead conversions are swept (never those of live ones), and a write that
fails names the output and the cause, not a temporary path."""

from __future__ import annotations

import gzip
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mzpeak_dask import ConvertOptions, convert, open_archive

from .conftest import BUNDLED, DATA, INLINE
from .helpers.cli import assert_clean, one_line_error, run_cli
from .helpers.replicate import replicate

pytestmark = pytest.mark.slow  # each runs conversions to the end, many in fresh processes

SMALL = BUNDLED / "small.mzML"
TINY = DATA / "pyteomics" / "tiny.pwiz.1.1.mzML"


def _staging(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp")]


def test_an_output_that_is_the_input_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "s.mzML"
    shutil.copy(SMALL, source)
    before = source.read_bytes()
    result = run_cli("convert", str(source), str(source), "--overwrite", "--cluster", "inline")
    one_line_error(result, str(source), "is the input")
    link = tmp_path / "link.mzpeak"
    link.symlink_to(source)
    hard = tmp_path / "hard.mzpeak"
    os.link(source, hard)
    for output in (link, hard):
        result = run_cli("convert", str(source), str(output), "--overwrite", "--cluster", "inline")
        one_line_error(result, str(output), "is the input")
    assert source.read_bytes() == before and link.is_symlink() and hard.stat().st_nlink == 2
    assert_clean(tmp_path, source, link, hard)


def test_an_archive_folder_holding_the_input_is_not_replaced(tmp_path: Path) -> None:
    archive = tmp_path / "u.mzpeak"
    archive.mkdir()
    source = archive / "x.mzML"
    shutil.copy(TINY, source)
    result = run_cli(
        "convert", str(source), str(archive), "--unpacked", "--overwrite", "--cluster", "inline"
    )
    one_line_error(result, str(archive), "holds the input")
    assert sorted(archive.iterdir()) == [source]


def test_an_existing_unpacked_archive_is_the_output_not_a_folder(tmp_path: Path) -> None:
    archive = tmp_path / "u.mzpeak"
    convert(TINY, archive, ConvertOptions(unpacked=True), cluster=INLINE)
    (archive / "stale.txt").write_text("left by an older build")
    before = sorted(p.name for p in archive.iterdir())
    result = run_cli("convert", str(SMALL), str(archive), "--unpacked", "--cluster", "inline")
    one_line_error(result, str(archive), "already exists")
    result = run_cli("convert", str(SMALL), str(archive), "--cluster", "inline")
    one_line_error(result, str(archive), "already exists")
    assert sorted(p.name for p in archive.iterdir()) == before
    result = run_cli(
        "convert", str(SMALL), str(archive), "--unpacked", "--overwrite", "--cluster", "inline"
    )
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in archive.iterdir())
    assert "stale.txt" not in names and "small.mzpeak" not in names
    assert "mzpeak_index.json" in names
    with open_archive(archive) as opened:
        assert len(opened) == 48
    assert_clean(tmp_path, archive)
    # several inputs need a folder: an archive is not one
    result = run_cli("convert", str(SMALL), str(TINY), str(archive), "--cluster", "inline")
    one_line_error(result, str(archive), "is an mzPeak archive")


def _gzipped_run(path: Path, copies: int) -> Path:
    plain = path.with_suffix("")
    plain.parent.mkdir(parents=True, exist_ok=True)
    replicate(SMALL, plain, copies=copies)
    with open(plain, "rb") as f, gzip.open(path, "wb", compresslevel=1) as out:
        shutil.copyfileobj(f, out)
    plain.unlink()
    return path


def _convert(source: Path, output: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "mzpeak_dask", "convert", str(source), str(output), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_staging(process: subprocess.Popen, folder: Path, member: str) -> Path:
    deadline = time.monotonic() + 300
    while True:
        found = [p for p in _staging(folder) if any(p.glob(member))]
        if found:
            return found[0]
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_killed_conversion_leaves_staging_the_next_one_removes(tmp_path: Path) -> None:
    source = _gzipped_run(tmp_path / "inputs" / "run.mzML.gz", copies=12)
    out = tmp_path / "out"
    out.mkdir()
    killed = _convert(source, out / "run.mzpeak", "--cluster", "inline", "-q")
    staging = _wait_for_staging(killed, out, "part-*")
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=60)
    assert staging.exists() and not (out / "run.mzpeak").exists()
    result = run_cli("convert", str(TINY), str(out / "run.mzpeak"), "--cluster", "inline", "-q")
    assert result.returncode == 0, result.stderr
    assert_clean(out, out / "run.mzpeak")


def test_a_live_conversion_keeps_its_staging(tmp_path: Path) -> None:
    source = tmp_path / "big.mzML"
    # long enough to still be converting after a second conversion has run, even when loaded
    replicate(SMALL, source, copies=32)
    out = tmp_path / "out"
    out.mkdir()
    live = _convert(source, out / "run.mzpeak", "--cluster", "inline", "-q", "--overwrite")
    staging = _wait_for_staging(live, out, "part-*")  # its partitions being written
    other = run_cli(
        "convert", str(TINY), str(out / "run.mzpeak"), "--cluster", "inline", "-q", "--overwrite"
    )
    assert other.returncode == 0, other.stderr
    still_running = live.poll() is None
    _, stderr = live.communicate(timeout=600)
    assert live.returncode == 0, stderr
    assert still_running, "the first conversion ended too early to check its staging"
    with open_archive(out / "run.mzpeak") as archive:
        assert len(archive) == 32 * 48
    assert not staging.exists()
    assert_clean(out, out / "run.mzpeak")


def _limited_file_size(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


@pytest.mark.parametrize(
    ("source", "cluster"),
    [
        (SMALL, "inline"),
        (DATA / "mzdata" / "small.mzML.gz", "inline"),
        pytest.param(SMALL, "local", marks=pytest.mark.cluster),
    ],
    ids=["archive-inline", "decompressed-inline", "archive-local"],
)
def test_a_write_that_fails_names_the_output_and_the_cause(
    tmp_path: Path, source: Path, cluster: str
) -> None:
    output = tmp_path / "out.mzpeak"
    command = [sys.executable, "-m", "mzpeak_dask", "convert", str(source), str(output)]
    workers = ["--workers", "2"] if cluster == "local" else []  # inline has none: refused
    result = subprocess.run(
        [*command, "--cluster", cluster, *workers, "--no-dashboard", "-q"],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_limited_file_size(300_000),  # as a full disk would, for files > 300 kB
    )
    one_line_error(result, str(source), f"cannot write {output}", "File too large")
    assert ".tmp" not in result.stderr and "internal error" not in result.stderr
    assert_clean(tmp_path)


@pytest.mark.parametrize("cluster", ["inline", pytest.param("local", marks=pytest.mark.cluster)])
def test_an_error_in_a_gzipped_input_names_the_input(tmp_path: Path, cluster: str) -> None:
    text = SMALL.read_text()
    at = text.index("<binary>", text.index('<spectrum index="5"')) + len("<binary>")
    source = tmp_path / "corrupt.mzML.gz"
    with gzip.open(source, "wt") as f:
        f.write(text[:at] + "!!!" + text[at + 3 :])
    result = run_cli(
        "convert", str(source), str(tmp_path / "out.mzpeak"), "--cluster", cluster, "-q"
    )
    one_line_error(result, f"error: {source}: spectrum", "scan=6", "corrupt base64")
    assert ".tmp" not in result.stderr
    assert_clean(tmp_path, source)
