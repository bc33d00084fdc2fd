"""Thermo ``.raw`` input (the ``thermo`` extra: fisher-py on Mono): the real sample converts on
one process and on spawned Dask workers, validates, and reads back equal to fisher-py's own
reading point for point (``tests/helpers/thermo_oracle.py``, run in a process of its own);
its header values equal ``Angiotensin_325-CID.info.json``; damaged files fail in one line
naming the file and leave nothing; a batch converts the others. The test process itself
never loads Mono: conversions run in spawned workers or command-line processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from mzpeak_dask import ClusterOptions, ConvertOptions, convert, open_archive
from mzpeak_dask.read.validate import ERROR, validate
from mzpeak_dask.readers import detect_format
from mzpeak_dask.readers.thermo import ThermoRawFormat
from mzpeak_dask.readers.thermo_runtime import missing

from ..conftest import DATA, ROOT
from ..helpers.cli import assert_clean, one_line_error, run_cli
from ..helpers.thermo_oracle import fisher_reading
from ..test_roundtrip import check_signal

THERMO = DATA / "vendor" / "thermo"
SAMPLE = THERMO / "Angiotensin_325-CID.raw"
INFO = json.loads((THERMO / "Angiotensin_325-CID.info.json").read_text())
MISSING = missing()
needs_thermo = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")
EXACT = ("--no-strip-zero-runs", "--no-null-marking")
CID = "MS:1000133"


@pytest.fixture(scope="module")
def fisher(tmp_path_factory) -> tuple[dict, dict[str, np.ndarray]]:
    if MISSING is not None:
        pytest.skip(MISSING)
    return fisher_reading(SAMPLE, tmp_path_factory.mktemp("fisher") / "reading.npz")


def _mono_loaded() -> bool:
    return any(name in sys.modules for name in ("clr", "pythonnet", "fisher_py"))


def test_signature_detects_raw_files_without_loading_mono(tmp_path: Path) -> None:
    assert detect_format(str(SAMPLE)) is ThermoRawFormat
    renamed = tmp_path / "run.bin"  # the content decides, never the suffix
    shutil.copy(SAMPLE, renamed)
    assert detect_format(str(renamed)) is ThermoRawFormat
    assert not ThermoRawFormat.sniff((THERMO / "invalid.raw").read_bytes())
    assert not _mono_loaded()


def _values_equal(archive: Path, header: dict, arrays: dict, *, centroid: bool, exact: bool):
    prefix = "centroid_" if centroid else ""
    with open_archive(archive) as run:
        assert len(run) == len(header["scans"]) == INFO["run_header_ex"]["spectra_count"]
        for spectrum, want in zip(run, header["scans"], strict=True):
            n = want["scan"]
            where = f"scan {n}"
            mz, intensity = arrays[f"{n}/{prefix}mz"], arrays[f"{n}/{prefix}intensity"]
            assert len(mz) > 0, where
            if exact:
                assert np.array_equal(spectrum.mz, mz), where
                assert np.array_equal(spectrum.intensity, intensity), where
            else:
                expected = {"m/z array": mz, "intensity array": intensity}
                check_signal(expected, spectrum.arrays, where)
            assert spectrum.id == f"controllerType=0 controllerNumber=1 scan={n}"
            assert spectrum.time == want["time"] and spectrum.ms_level == want["ms_level"]
            assert spectrum.polarity == (1 if want["positive"] else -1)
            assert spectrum.is_centroid == (centroid or want["centroid"]), where
            values = {p.accession: p.value for p in spectrum.params}
            assert values["MS:1000285"] == want["tic"]
            assert values["MS:1000504"] == want["base_peak_mz"]
            assert values["MS:1000505"] == want["base_peak_intensity"]
            assert spectrum.scans[0]["MS_1000512_filter_string"] == want["filter"]
            (precursor,) = spectrum.precursors
            half = want["isolation_width"] / 2
            assert precursor.isolation_window["target"] == want["precursor"]
            assert precursor.isolation_window["lower_offset"] == half
            assert precursor.isolation_window["upper_offset"] == half
            assert precursor.mz == want["precursor"] and precursor.charge == 1  # trailer: 1
            methods = {p.accession: p.value for p in precursor.activation}
            assert want["activation"] == 0 and CID in methods
            assert methods["MS:1000045"] == want["collision_energy"]
        tic = run.read_chromatogram(0)
        assert tic.id == "TIC" and tic.chromatogram_type == "MS:1000235"
        assert np.array_equal(tic.time, arrays["tic/time"])
        assert np.array_equal(tic.intensity, arrays["tic/intensity"])
        bpc = run.read_chromatogram(1)
        assert np.array_equal(bpc.intensity, arrays["bpc/intensity"])
    assert not [p for p in validate(archive) if p.severity == ERROR]


@needs_thermo
@pytest.mark.slow
@pytest.mark.parametrize("exact", [False, True], ids=["defaults", "zeros-kept"])
def test_inline_conversion_equals_fisher_py(fisher, tmp_path: Path, exact: bool) -> None:
    output = tmp_path / "run.mzpeak"
    flags = EXACT if exact else ()
    result = run_cli("convert", str(SAMPLE), str(output), "--cluster", "inline", *flags)
    assert result.returncode == 0, result.stderr
    assert "Assertion" not in result.stderr and "Native Crash" not in result.stderr
    _values_equal(output, *fisher, centroid=False, exact=exact)


@needs_thermo
@pytest.mark.slow
def test_a_symbolic_link_to_a_raw_file_converts_as_the_file(fisher, tmp_path: Path) -> None:
    """Thermo's reader on Mono fails on a link ("Arithmetic operation resulted in an
    overflow"): the file it links to is what is opened."""
    link = tmp_path / "linked.raw"
    link.symlink_to(SAMPLE)
    output = tmp_path / "run.mzpeak"
    result = run_cli("convert", str(link), str(output), "--cluster", "inline")
    assert result.returncode == 0, result.stderr
    _values_equal(output, *fisher, centroid=False, exact=False)


@needs_thermo
@pytest.mark.slow
def test_a_process_that_read_a_raw_file_writes_other_runs_as_any_process(tmp_path: Path) -> None:
    """Mono sets the x87 precision to double as it starts, which changed the last bits of the
    m/z spacing models of every later run in the process (a worker that had read a .raw file
    wrote other archives differently): the floating-point environment is kept as it was."""
    after = tmp_path / "after.mzpeak"
    code = (
        "import sys\n"
        "from mzpeak_dask import convert\n"
        "from mzpeak_dask.options import ClusterOptions\n"
        "inline = ClusterOptions(cluster='inline')\n"
        "convert(sys.argv[1], sys.argv[2], cluster=inline)\n"
        "convert(sys.argv[3], sys.argv[4], cluster=inline)\n"
    )
    small = DATA / "mzdata" / "small.mzML"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(SAMPLE),
            str(tmp_path / "raw.mzpeak"),
            str(small),
            str(after),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    convert(small, tmp_path / "fresh.mzpeak", cluster=ClusterOptions(cluster="inline"))
    assert after.read_bytes() == (tmp_path / "fresh.mzpeak").read_bytes()


@needs_thermo
@pytest.mark.cluster
@pytest.mark.slow
def test_spawned_workers_read_the_centroid_stream(fisher, tmp_path: Path, local_client) -> None:
    output = tmp_path / "run.mzpeak"
    options = ConvertOptions(thermo_centroid=True, partition_items=3)  # 4 partitions of scans
    result = convert(SAMPLE, output, options, client=local_client)
    assert result.spectra == 10
    _values_equal(output, *fisher, centroid=True, exact=True)
    assert not _mono_loaded()  # the coordinator (this process) never loaded Mono


@needs_thermo
@pytest.mark.slow
def test_header_values_equal_the_info_json(fisher, tmp_path: Path) -> None:
    output = tmp_path / "run.mzpeak"
    assert run_cli("convert", str(SAMPLE), str(output)).returncode == 0
    header, _ = fisher
    run_header = INFO["run_header"]
    created = datetime.fromisoformat(INFO["file_header"]["creation_date"]["value"])
    with open_archive(output) as run:
        meta = run.file_metadata
        assert datetime.fromisoformat(meta["run"]["start_time"]) == created
        assert meta["sample_list"][0]["name"] == INFO["sample_information"]["sample_name"]
        assert run[0].id.endswith(f"scan={run_header['first_spectrum']}")
        assert run[len(run) - 1].id.endswith(f"scan={run_header['last_spectrum']}")
        assert run[0].time == run_header["start_time"]
        assert run[len(run) - 1].time == run_header["end_time"]
        window = run[0].scans[0]["scan_windows"][0]
        assert window["MS_1000501_scan_window_lower_limit_unit_MS_1000040"] == 150.0
        assert window["MS_1000500_scan_window_upper_limit_unit_MS_1000040"] == 2000.0
        assert run_header["low_mass"] == 150.0 and run_header["high_mass"] == 2000.0
        tics = [next(p.value for p in s.params if p.accession == "MS:1000285") for s in run]
        assert max(tics) == run_header["max_integrated_intensity"]
        (instrument,) = meta["instrument_configuration_list"]
        params = {p["accession"]: p["value"] for p in instrument["parameters"]}
        assert header["model"] == "Orbitrap Fusion Lumos" and "MS:1002732" in params
        assert params["MS:1000529"] == header["serial"]
        kinds = {c["component_type"]: c["parameters"][0]["name"] for c in instrument["components"]}
        assert kinds == {
            "ionsource": "electrospray ionization",
            "analyzer": "orbitrap",
            "detector": "inductive detector",
        }
        source = meta["file_description"]["source_files"][-1]
        formats = {p["accession"] for p in source["parameters"]}
        assert {"MS:1000563", "MS:1000768"} <= formats


def _truncated(folder: Path) -> Path:
    path = folder / "truncated.raw"
    path.write_bytes(SAMPLE.read_bytes()[: SAMPLE.stat().st_size // 2])
    return path


@needs_thermo
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["invalid", "truncated"])
def test_bad_raw_files_fail_in_one_line(tmp_path: Path, kind: str) -> None:
    if kind == "invalid":
        source = tmp_path / "invalid.raw"
        shutil.copy(THERMO / "invalid.raw", source)
        reason = "not a recognised MS data file"
    else:
        source, reason = _truncated(tmp_path), "not a readable Thermo .raw file (CRC failed"
    result = run_cli("convert", str(source), str(tmp_path / "out.mzpeak"))
    one_line_error(result, str(source), reason)
    assert_clean(tmp_path, source)


@needs_thermo
@pytest.mark.cluster
@pytest.mark.slow
def test_batch_finds_raw_files_and_converts_the_good_ones(tmp_path: Path) -> None:
    source, output = tmp_path / "repository", tmp_path / "out"
    (source / "deeper").mkdir(parents=True)
    shutil.copy(SAMPLE, source / "deeper" / "good.raw")
    shutil.copy(THERMO / "invalid.raw", source / "invalid.raw")
    _truncated(source)
    result = run_cli("batch", str(source), str(output), "--workers", "2", "--no-dashboard")
    assert result.returncode != 0
    report = json.loads((output / "batch_report.json").read_text())
    files = {Path(f["input"]).name: f for f in report["files"]}
    assert files["good.raw"]["status"] == "converted" and files["good.raw"]["spectra"] == 10
    assert (output / "deeper" / "good.mzpeak").is_file()
    for bad in ("invalid.raw", "truncated.raw"):
        assert files[bad]["status"] == "failed" and str(source / bad) in files[bad]["error"]
    assert not (output / "invalid.mzpeak").exists() and not (output / "truncated.mzpeak").exists()


BLOCKED = """import sys
sys.modules["fisher_py"] = None  # as where the extra is not installed
from mzpeak_dask.cli import run
run()
"""


def test_missing_extra_says_what_to_install(tmp_path: Path) -> None:
    output = tmp_path / "out.mzpeak"
    command = [sys.executable, "-c", BLOCKED, "convert", str(SAMPLE), str(output)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
    one_line_error(result, str(SAMPLE), "pip install 'mzpeak-dask[thermo]'")
    assert not output.exists()


# Mono taken away from one process tree, in a mount namespace of its own: the dynamic linker's
# cache (where clr_loader looks for libmono) and Mono's assemblies hidden, or only the
# netstandard.dll that mono-devel alone installs (a machine with mono-runtime only)
HIDDEN = {
    "no-mono": ("/etc/ld.so.cache", "/usr/lib/mono"),
    "no-mono-devel": ("/usr/lib/mono/4.5/Facades",),
}


def _hidden_from(paths: tuple[str, ...], tmp_path: Path) -> list[str]:
    empty_dir, empty_file = tmp_path / "empty", tmp_path / "empty-file"
    empty_dir.mkdir()
    empty_file.touch()
    mounts = " && ".join(
        f"mount --bind {empty_dir if os.path.isdir(p) else empty_file} {p}" for p in paths
    )
    # no compiler or linker on the PATH either: ctypes would find libmono through them
    script = f'{mounts} && PATH={empty_dir} exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "-"]


@needs_thermo  # Mono is here to be hidden
@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="hiding Mono from a process needs root and unshare (CI runs as root)",
)
@pytest.mark.slow
@pytest.mark.parametrize("kind", list(HIDDEN))
def test_missing_mono_says_what_to_install(tmp_path: Path, kind: str) -> None:
    output = tmp_path / "out.mzpeak"
    command = [
        *_hidden_from(HIDDEN[kind], tmp_path),
        *(sys.executable, "-m", "mzpeak_dask", "convert", str(SAMPLE), str(output)),
        *("--workers", "1", "--no-dashboard"),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
    one_line_error(result, str(SAMPLE), "needs Mono: apt-get install mono-runtime")
    assert not output.exists()
