"""Damaged Zarr stores of exported runs, read by ``xic`` and the Python API: a chunk that is
garbled, cut short, missing, or inflates far past the size its array declares (a Zstandard
bomb), a ``zarr.json`` that is not JSON, lacks its fill value or gives another shape or data
type, an array that is gone. Each is one ``error:`` line naming the store, the array and (for a
chunk) the chunk, a non-zero exit, and a bomb is refused before it is inflated; in a run folder
and in a single-file run alike."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest
import zarr

from mzpeak_dask import ConvertOptions, cli, convert
from mzpeak_dask.analysis import xic
from mzpeak_dask.errors import ZarrStoreError
from mzpeak_dask.export.zarr import to_zarr

from ..conftest import DATA, INLINE
from ..helpers.processes import run_measured as measured
from .damage import bomb, damage_folder, damage_zip, edit_json

SOURCE = DATA / "mzdata" / "three_test_scans.mzML"
RUN = "three"
BOMB = 512 << 20  # what the bomb inflates to; its frame is some 16 kB
ROOT = Path(__file__).resolve().parents[2]


class Exported:
    def __init__(self, root: Path):
        archive = root / f"{RUN}.mzpeak"
        convert(SOURCE, archive, ConvertOptions(layout="chunked"), cluster=INLINE)
        self.store = root / "runs.zarr"
        to_zarr([archive], self.store, cluster=INLINE)
        to_zarr([archive], root / "single", cluster=INLINE, single_file=True)
        self.single = root / "single" / f"{RUN}.zarr.zip"
        with zarr.config.set({"array.rectilinear_chunks": True}):
            group = zarr.open_group(str(self.store / RUN), mode="r")
            end = group["chunk_lengths"][0]
            mz, intensity = (group[name][:end] for name in ("mz", "intensity"))
        self.mz = f"{mz[np.argmax(intensity)]:.6f}"  # a peak of the first mzPeak chunk

    def damaged(self, form: str, out: Path, key: str, edit) -> Path:
        """A damaged copy: the store folder, or the single-file run."""
        if form == "folder":
            damage_folder(self.store, out, f"{RUN}/{key}", edit)
            return out
        out.mkdir()
        return damage_zip(self.single, out / self.single.name, key, edit)


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Exported:
    return Exported(tmp_path_factory.mktemp("damaged-stores"))


def _garble(raw: bytes) -> bytes:
    return np.random.default_rng(7).integers(0, 256, len(raw), dtype=np.uint8).tobytes()


def _drop(field: str):
    return edit_json(lambda document: document.pop(field))


def _grow(document: dict) -> None:
    document["shape"] = [document["shape"][0] + 1]


def _huge(document: dict) -> None:  # 10^12 chunks of one point: no reader may list them
    document["shape"] = [10**12]
    document["chunk_grid"] = {"name": "regular", "configuration": {"chunk_shape": [1]}}


DAMAGES = {  # name -> (object of the run, edit (None: removed), what the error names)
    "garbage-chunk": ("mz/c/0", _garble, ("mz", "chunk 0", "damaged")),
    "truncated-chunk": ("mz/c/0", lambda raw: raw[: len(raw) // 2], ("mz", "chunk 0", "damaged")),
    "empty-chunk": ("mz/c/0", lambda raw: b"", ("mz", "chunk 0", "damaged")),
    "oversized-chunk": ("mz/c/0", lambda raw: raw + bytes(1 << 20), ("mz", "chunk 0", "more than")),
    "missing-chunk": ("intensity/c/0", None, ("intensity", "chunk 0", "missing")),
    "no-fill-value": ("mz/zarr.json", _drop("fill_value"), ("mz", "fill_value")),
    "not-json": ("intensity/zarr.json", lambda raw: b"{not json", ("intensity", "not JSON")),
    "wrong-shape": ("mz/zarr.json", edit_json(_grow), ("mz", "shape")),
    "wrong-table-shape": ("chunk_start/zarr.json", edit_json(_grow), ("chunk_start", "damaged")),
    "garbage-table-chunk": ("chunk_lengths/c/0", _garble, ("chunk_lengths", "Zarr chunk 0")),
    "truncated-table-chunk": (
        "chunk_spectrum_index/c/0",
        lambda raw: raw[:-3],
        ("chunk_spectrum_index", "chunk 0", "damaged"),
    ),
    "wrong-dtype": (
        "mz/zarr.json",
        edit_json(lambda document: document.update(data_type="float32")),
        ("mz", "chunk 0", "declares"),
    ),
    "huge-grid": ("mz/zarr.json", edit_json(_huge), ("mz", "chunks")),
    "missing-array": ("intensity/zarr.json", None, ("intensity", "no array")),
}


def assert_one_error_line(code: int, stderr: str, *fragments: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code != 0
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ") and "internal error" not in lines[0], lines[0]
    assert "Traceback" not in stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.mark.parametrize("form", ["folder", "single-file"])
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_damaged_store_is_one_error_line(exported, tmp_path, capsys, form, damage) -> None:
    key, edit, fragments = DAMAGES[damage]
    store = exported.damaged(form, tmp_path / "damaged", key, edit)
    code = cli.main(["xic", str(store), "--mz", exported.mz, "--ms-level", "0"])
    assert_one_error_line(code, capsys.readouterr().err, str(store), *fragments)
    with pytest.raises(ZarrStoreError, match="damaged"):
        xic(str(store), [float(exported.mz)], ms_level=None)


@pytest.mark.parametrize("form", ["folder", "single-file"])
def test_run_of_an_older_format_is_refused_in_one_line(exported, tmp_path, capsys, form) -> None:
    """A run group of the previous layout (format 2, whose per-mzPeak-chunk tables were read
    whole): one error line naming the store and saying to export it again."""

    def older(document: dict) -> None:
        document["attributes"]["format"] = "mzpeak-dask zarr export 2"

    store = exported.damaged(form, tmp_path / "older", "zarr.json", edit_json(older))
    code = cli.main(["xic", str(store), "--mz", exported.mz])
    line = assert_one_error_line(code, capsys.readouterr().err, str(store), "export it again")
    assert "mzpeak-dask zarr export 2" in line
    with pytest.raises(ZarrStoreError, match="export it again"):
        xic(str(store), [float(exported.mz)])


@pytest.mark.parametrize(
    "cut",
    [lambda raw: raw[: len(raw) // 2], lambda raw: b"PK" + bytes(998)],
    ids=["cut", "garbage"],
)
def test_damaged_single_file_is_one_error_line(exported, tmp_path, capsys, cut) -> None:
    store = tmp_path / exported.single.name
    store.write_bytes(cut(exported.single.read_bytes()))
    code = cli.main(["xic", str(store), "--mz", exported.mz])
    assert_one_error_line(code, capsys.readouterr().err, str(store), "not a ZIP file")


def test_single_file_member_with_a_flipped_byte_is_one_error_line(exported, tmp_path, capsys):
    """A chunk's bytes changed inside the ZIP: a reader of single frames does not check the
    member's CRC, but each frame's own checksum."""
    with zipfile.ZipFile(exported.single) as archive:
        info = archive.getinfo("mz/c/0")
    data = bytearray(exported.single.read_bytes())
    at = info.header_offset  # the local header's own name and extra lengths
    name_length, extra_length = struct.unpack("<HH", data[at + 26 : at + 30])
    data[at + 30 + name_length + extra_length + 10] ^= 0xFF
    store = tmp_path / exported.single.name
    store.write_bytes(bytes(data))
    code = cli.main(["xic", str(store), "--mz", exported.mz, "--ms-level", "0"])
    assert_one_error_line(code, capsys.readouterr().err, str(store), "mz", "chunk 0", "damaged")


def test_undamaged_copies_read(exported, tmp_path, capsys) -> None:
    """The copies the damage is made on read as the originals do (the damage is the cause)."""
    folder = exported.damaged("folder", tmp_path / "folder", "mz/c/0", lambda raw: raw)
    single = exported.damaged("single-file", tmp_path / "single", "mz/c/0", lambda raw: raw)
    found = xic([str(folder), str(single)], [float(exported.mz)], ms_level=None)
    frames = list(found.values())
    assert len(frames) == 2 and frames[0].equals(frames[1])
    assert (frames[0][float(exported.mz)] > 0).any()


def run_measured(argv: list[str], stderr: Path, timeout: float = 300) -> tuple[int, str, int]:
    """``python ARGV`` in a fresh process: its exit code, stderr (kept in the file ``stderr``)
    and peak RSS in bytes (from ``wait4``: this child's alone)."""
    done = measured(argv, ROOT, None, stderr, timeout)
    return done.returncode, stderr.read_text(), done.peak_rss


API = (
    "import sys\n"
    "from mzpeak_dask.analysis import xic\n"
    "from mzpeak_dask.errors import ZarrStoreError\n"
    "try:\n"
    "    xic(sys.argv[1], [float(sys.argv[2])], ms_level=None)\n"
    "except ZarrStoreError as exc:\n"
    "    print(f'error: {exc}', file=sys.stderr)\n"
    "    sys.exit(1)\n"
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "form,declare",
    [("folder", True), ("folder", False), ("single-file", True), ("single-file", False)],
    ids=["folder-declared", "folder-unknown-size", "single-file-declared", "single-file-unknown"],
)
def test_zstd_bomb_is_refused_before_it_inflates(exported, tmp_path, form, declare) -> None:
    frame = bomb(BOMB, declare)
    assert len(frame) < 64 << 10
    store = exported.damaged(form, tmp_path / "bombed", "mz/c/0", lambda raw: frame)
    argv = ["-m", "mzpeak_dask", "xic", "--mz", exported.mz, "--ms-level", "0"]
    log = tmp_path / "stderr"
    code, _, baseline = run_measured([*argv, str(exported.store)], log)  # undamaged: reference
    assert code == 0
    for command in ([*argv, str(store)], ["-c", API, str(store), exported.mz]):
        code, stderr, peak = run_measured(command, log)
        assert_one_error_line(code, stderr, str(store), "mz", "chunk 0", "damaged")
        # the bomb would add BOMB bytes (and more: a copy); refused, the run costs what a
        # clean one does
        assert peak < baseline + BOMB // 4, (peak, baseline)
