"""Bruker timsTOF ``.d`` folders: values equal timsrust's reading point for point (and
opentimspy's raw reading), the mapping of frames to spectra, bad folders, batches."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mzpeak_dask.read.archive import open_archive
from tests.helpers.cli import one_line_error, run_cli
from tests.helpers.tdf_folders import dda_run, packet, write_run

VENDOR = Path(__file__).resolve().parents[3] / "shared" / "data" / "vendor" / "bruker"
DIA = VENDOR / "230711_idleflow_400-1000mz_25mz_diaPasef_10sec.d"
DDA = VENDOR / "dda_test.d"
INSTALL = "pip install 'mzpeak-dask[bruker]'"

try:
    import timsrust_pyo3 as tr
except ImportError:  # pragma: no cover
    tr = None
needs_timsrust = pytest.mark.skipif(tr is None, reason=f"the bruker extra is missing: {INSTALL}")
pytestmark = needs_timsrust


def _expected(folder: Path) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Every spectrum as timsrust reads its frames, converts TOF and scans, straight from the
    TDF tables: MS1 frames whole, ddaPASEF precursors over all their frames' scan ranges,
    diaPASEF frames per window; frame by frame, scans from last to first (increasing 1/K0),
    each scan's peaks as stored."""
    reader, meta = tr.FrameReader(str(folder)), tr.Metadata(str(folder / "analysis.tdf"))
    db = sqlite3.connect(folder / "analysis.tdf")
    kinds = dict(db.execute("SELECT Id, MsMsType FROM Frames").fetchall())
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    pasef = (db.execute("SELECT Precursor, Frame, ScanNumBegin, ScanNumEnd FROM "
                        "PasefFrameMsMsInfo ORDER BY Precursor, Frame").fetchall()
             if "PasefFrameMsMsInfo" in tables else [])  # fmt: skip
    parts: dict[int, list] = {}
    for p, f, b, e in pasef:
        parts.setdefault(p, []).append((f, b, e))
    windows = (db.execute("SELECT i.Frame, w.ScanNumBegin, w.ScanNumEnd FROM DiaFrameMsMsInfo i "
                          "JOIN DiaFrameMsMsWindows w USING (WindowGroup) "
                          "ORDER BY i.Frame, w.ScanNumBegin").fetchall()
               if "DiaFrameMsMsInfo" in tables else [])  # fmt: skip
    entries = []
    for frame, kind in sorted(kinds.items()):
        if kind == 0:
            entries.append([(frame, 0, None)])
        elif kind == 8:
            entries += [sorted(v) for p, v in sorted(parts.items()) if min(v)[0] == frame]
        else:
            entries += [[(f, b, e)] for f, b, e in windows if f == frame]
    out = []
    for entry in entries:
        mz, inten, im = [], [], []
        for frame, begin, end in entry:
            data = reader.read_frame(frame - 1)
            offsets = data.scan_offsets
            end = len(offsets) - 1 if end is None else end
            scans = meta.resolve_scans(list(range(begin, end)))
            for scan in range(end - 1, begin - 1, -1):  # increasing 1/K0: the last scan first
                a, b = offsets[scan], offsets[scan + 1]
                mz += meta.resolve_mzs(data.tof_indices[a:b]) if b > a else []
                inten += data.intensities[a:b]
                im += [scans[scan - begin]] * (b - a)
        out.append(tuple(np.array(v, dtype=np.float64) for v in (mz, inten, im)))
    return out


def _convert(folder: Path, out: Path, *extra: str) -> Path:
    result = run_cli("convert", str(folder), str(out), "--workers", "2", *extra)
    assert result.returncode == 0, result.stderr
    return out


@pytest.mark.slow
@pytest.mark.parametrize("folder", [DDA, DIA], ids=["ddaPASEF", "diaPASEF"])
def test_values_equal_timsrust_point_for_point(folder: Path, tmp_path: Path) -> None:
    """In partitions of about 2 MiB of frame data (six for the diaPASEF run) on 2 workers."""
    archive = _convert(folder, tmp_path / "run.mzpeak", "--partition-bytes", "2MiB")
    assert run_cli("validate", str(archive)).returncode == 0
    expected = _expected(folder)
    with open_archive(str(archive)) as a:
        assert len(a) == len(expected)
        for spectrum, (mz, intensity, im) in zip(a, expected, strict=True):
            arrays = spectrum.arrays
            got = arrays.get("m/z array", np.zeros(0))
            np.testing.assert_array_equal(got, mz)
            np.testing.assert_array_equal(arrays.get("intensity array", np.zeros(0)), intensity)
            np.testing.assert_array_equal(
                arrays.get("mean inverse reduced ion mobility array", np.zeros(0)), im
            )


def test_dia_windows_and_counts(tmp_path: Path) -> None:
    archive = _convert(DIA, tmp_path / "dia.mzpeak")
    with open_archive(str(archive)) as a:
        levels = [s.ms_level for s in a]
        assert levels.count(1) == 15 and levels.count(2) == 116 * 3
        windows = a.table("precursor", pandas=True)["isolation_window"]
        targets = {w["MS_1000827_isolation_window_target_mz"] for w in windows}
        assert {412.5, 612.5, 812.5} <= targets
        assert {w["MS_1000828_isolation_window_lower_offset"] for w in windows} == {12.5}
        meta = a.file_metadata
    instrument = meta["instrument_configuration_list"][0]
    assert {p["value"] for p in instrument["parameters"]} >= {"1885933.00075", "timsTOF SCP"}


@pytest.mark.parametrize("folder", [DDA, DIA], ids=["ddaPASEF", "diaPASEF"])
def test_tic_and_base_peak_chromatograms_are_the_frames_table(folder: Path, tmp_path: Path):
    """A point per frame, as msconvert writes them: the frame's time (minutes in the
    archive), summed or largest intensity, and MS level (1 for MS1, 2 for PASEF frames)."""
    db = sqlite3.connect(folder / "analysis.tdf")
    rows = db.execute(
        "SELECT Time, SummedIntensities, MaxIntensity, MsMsType FROM Frames ORDER BY Id"
    ).fetchall()
    time, summed, largest, kind = (np.array(c) for c in zip(*rows, strict=True))
    archive = _convert(folder, tmp_path / "run.mzpeak")
    assert run_cli("validate", str(archive)).returncode == 0
    with open_archive(str(archive)) as a:
        traces = [a.read_chromatogram(i) for i in range(a.chromatogram_count)]
    assert [(c.id, c.chromatogram_type) for c in traces] == [
        ("TIC", "MS:1000235"), ("BPC", "MS:1000628")
    ]  # fmt: skip
    for trace, want in zip(traces, (summed, largest), strict=True):
        np.testing.assert_allclose(trace.arrays["time array"], time / 60, rtol=1e-15)
        np.testing.assert_array_equal(trace.arrays["intensity array"], want)
        np.testing.assert_array_equal(trace.arrays["ms level"], np.where(kind == 0, 1, 2))


def test_synthetic_edge_cases(tmp_path: Path) -> None:
    """An empty scan, a frame with no peaks, several precursors per frame, a precursor
    measured in two frames: timsrust's values, one spectrum per MS1 frame and precursor."""
    folder = write_run(tmp_path / "synthetic.d", dda_run())
    archive = _convert(folder, tmp_path / "synthetic.mzpeak")
    assert run_cli("validate", str(archive)).returncode == 0
    expected = _expected(folder)
    with open_archive(str(archive)) as a:
        spectra = list(a)
        ions = a.table("selected_ion", pandas=True)
    assert [s.ms_level for s in spectra] == [1, 2, 2, 1, 2]
    assert [len(e[0]) for e in expected] == [8, 3, 5, 0, 3]
    for spectrum, (mz, intensity, im) in zip(spectra, expected, strict=True):
        np.testing.assert_array_equal(spectrum.arrays.get("m/z array", np.zeros(0)), mz)
        np.testing.assert_array_equal(
            spectrum.arrays.get("intensity array", np.zeros(0)), intensity
        )
        np.testing.assert_array_equal(
            spectrum.arrays.get("mean inverse reduced ion mobility array", np.zeros(0)), im
        )
    # precursor 2 combines frame 2's scans 2-4 and frame 4's scans 3-4
    assert sorted(spectra[2].arrays["intensity array"]) == [14, 15, 16, 24, 25]
    assert ions["MS_1000744_selected_ion_mz_unit_MS_1000040"].tolist() == [500.25, 600.75, 701.9]


def test_opentims_reads_the_same_raw_values() -> None:
    """The real diaPASEF run (opentimspy refuses dda_test.d, whose GlobalMetadata lacks the
    schema version)."""
    opentimspy = pytest.importorskip("opentimspy", reason="opentimspy is not installed")
    for folder in (DIA,):
        reader = tr.FrameReader(str(folder))
        with opentimspy.OpenTIMS(folder) as ot:
            accumulation = ot.frames["AccumulationTime"]
            for frame in ot.frames["Id"].tolist()[:20]:
                data = ot.query(frame, columns=("scan", "tof", "intensity"))
                ours = reader.read_frame(frame - 1)
                scans = np.repeat(np.arange(len(ours.scan_offsets) - 1),
                                  np.diff(ours.scan_offsets))  # fmt: skip
                np.testing.assert_array_equal(data["tof"], ours.tof_indices)
                # opentimspy gives counts per 100 ms of accumulation, rounded
                scaled = np.rint(np.array(ours.intensities) * 100 / accumulation[frame - 1])
                np.testing.assert_array_equal(data["intensity"], scaled)
                np.testing.assert_array_equal(data["scan"], scans)


def _bad_folders(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    run = dda_run()
    good = packet(run.frames[1])
    # a packet of the right scans whose data inflate to fewer peaks than the frame declares
    wrong_size = packet(type(run.frames[1])(8, run.frames[1].scans[:4] + [([], [])]))
    out = {
        "missing bin": (write_run(tmp_path / "nobin.d", run), "analysis.tdf_bin is missing"),
        "corrupt bin": (write_run(tmp_path / "garbled.d", run,
                                  packets={2: good[:8] + b"\xff" * (len(good) - 8)}),
                        "frame 2"),
        "corrupt data": (write_run(tmp_path / "zeroed.d", run,
                                   packets={2: good[:20] + bytes(len(good) - 20)}),
                         "frame 2: timsrust cannot read it"),
        "size disagrees": (write_run(tmp_path / "size.d", run, packets={2: wrong_size}),
                           "frame 2"),
        "corrupt tdf": (write_run(tmp_path / "badtdf.d", run), "not a readable SQLite"),
    }  # fmt: skip
    (tmp_path / "nobin.d" / "analysis.tdf_bin").unlink()
    (tmp_path / "badtdf.d" / "analysis.tdf").write_bytes(b"garbage" * 200)
    return out


def test_bad_folders_fail_in_one_line_leaving_nothing(tmp_path: Path) -> None:
    for what, (folder, fragment) in _bad_folders(tmp_path).items():
        out = tmp_path / f"{folder.stem}.mzpeak"
        result = run_cli("convert", str(folder), str(out))
        one_line_error(result, str(folder), fragment)
        assert not out.exists(), what


@pytest.mark.cluster
@pytest.mark.slow
def test_batch_converts_d_folders_as_inputs(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "lab").mkdir(parents=True)
    shutil.copytree(DDA, repo / "lab" / "dda_test.d")
    write_run(repo / "lab" / "synthetic.d", dda_run())
    bad = write_run(repo / "broken.d", dda_run())
    (bad / "analysis.tdf_bin").unlink()
    result = run_cli("batch", str(repo), str(tmp_path / "out"), "--workers", "2")
    assert result.returncode != 0  # one input failed
    assert (tmp_path / "out" / "lab" / "dda_test.mzpeak").is_file()
    assert (tmp_path / "out" / "lab" / "synthetic.mzpeak").is_file()
    assert not (tmp_path / "out" / "broken.mzpeak").exists()
    assert "broken.d" in result.stderr


def test_missing_extra_says_what_to_install(tmp_path: Path) -> None:
    """Where timsrust-pyo3 cannot be imported (its module blocked in this process), one line
    names the extra to install."""
    code = ("import sys; sys.modules['timsrust_pyo3'] = None; from mzpeak_dask.cli import run; "
            f"sys.argv = ['mzpeak-dask', 'convert', {str(DDA)!r}, {str(tmp_path / 'x.mzpeak')!r}]; "
            "sys.exit(run())")  # fmt: skip
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300)  # fmt: skip
    one_line_error(result, INSTALL)
    assert not (tmp_path / "x.mzpeak").exists()
