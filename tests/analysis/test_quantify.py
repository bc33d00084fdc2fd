"""Targeted quantification and ion maps from archives (point and chunked layouts) and the Zarr
export agree with a plain numpy computation over the source mzML read by pyteomics."""

from __future__ import annotations

import importlib

import dask
import numpy as np
import pandas as pd
import pytest

from mzpeak_dask.analysis import ArchiveRun, ZarrRun, ion_map, quantify
from mzpeak_dask.analysis.ion_map import bin_index
from mzpeak_dask.errors import InputError, MzPeakDaskError, TargetsError

from ..export.builds import METABO, SMALL
from .test_chromatograms import source_spectra

pytestmark = pytest.mark.slow  # the shared archives and their export are built first

LAYOUTS = {SMALL: ("small.point", "small.chunked"), METABO: ("metabo.point", "metabo.chunked")}


def runs_of(exported, source) -> list:
    names = LAYOUTS[source]
    return [ArchiveRun(exported.archives[n]) for n in names] + [
        ZarrRun(exported.store / n) for n in names
    ]


def targets_for(source, count: int = 12, seed: int = 1) -> pd.DataFrame:
    """Strong peaks of MS1 spectra with RT windows around their spectrum, some in seconds,
    one with a threshold, an MS2 target and a target without signal."""
    rng = np.random.default_rng(seed)
    spectra = source_spectra(source)
    ms1 = [s for s in spectra if s[1] == 1]
    times = np.array([s[0] for s in ms1])
    span = times.max() - times.min() + 1e-3
    rows = []
    for k in range(count):
        time, _, mz, intensity = ms1[rng.integers(len(ms1))]
        peak = float(mz[np.argsort(intensity)[-1 - k % 5]])
        low, high = time - span * rng.uniform(0.05, 0.3), time + span * rng.uniform(0.05, 0.3)
        rows.append([f"t{k}", peak, float(rng.choice([5, 10, 30])), low, high, "min", 0.0, 1])
    rows[1][3:6] = [rows[1][3] * 60, rows[1][4] * 60, "s"]
    rows[2][6] = float(np.median(ms1[0][3]))
    ms2 = [s for s in spectra if s[1] == 2]
    if ms2:
        top = float(ms2[0][2][np.argmax(ms2[0][3])])
        rows.append(["ms2", top, 10.0, 0.0, 1e6, "min", 0.0, 2])
    rows.append(["none", 1234.5678, 10.0, 0.0, 1e6, "min", 0.0, 1])
    columns = ["peak_label", "mz_mean", "mz_width", "rt_min", "rt_max", "rt_unit"]
    return pd.DataFrame(rows, columns=[*columns, "intensity_threshold", "ms_level"])


def oracle(source, targets: pd.DataFrame) -> pd.DataFrame:
    """The contract's figures, target by target, from pyteomics' spectra."""
    spectra = source_spectra(source)
    out = []
    for t in targets.itertuples():
        scale = 60.0 if t.rt_unit == "s" else 1.0
        rt_min, rt_max = t.rt_min / scale, t.rt_max / scale
        delta = t.mz_mean * t.mz_width * 1e-6
        times, xic, points = [], [], []
        for time, level, mz, intensity in spectra:
            if level != t.ms_level or not rt_min <= time <= rt_max:
                continue
            inside = (np.abs(mz - t.mz_mean) <= delta) & (intensity >= t.intensity_threshold)
            inside &= intensity > 0
            times.append(time)
            xic.append(intensity[inside].sum())
            points += [(time, m, i) for m, i in zip(mz[inside], intensity[inside], strict=True)]
        order = np.argsort(times, kind="stable")
        times, xic = np.array(times)[order], np.array(xic)[order]
        row = {"peak_label": t.peak_label, "spectra": len(times)}
        row["area"] = float(np.trapezoid(xic, times)) if len(times) > 1 else 0.0
        p = np.array(points).reshape(-1, 3)
        row["peak_area"] = p[:, 2].sum()
        row["peak_n_datapoints"] = len(p)
        if len(p):
            best = int(np.argmax(p[:, 2]))
            row |= {
                "peak_max": p[:, 2].max(),
                "peak_min": p[:, 2].min(),
                "peak_mean": p[:, 2].mean(),
                "peak_median": np.median(p[:, 2]),
                "peak_rt_of_max": p[best, 0],
                "peak_mass_diff_50pc": np.median((p[:, 1] - t.mz_mean) / t.mz_mean * 1e6),
                "apex_time": times[np.argmax(xic)],
                "apex_intensity": xic.max(),
            }
        else:
            nan = np.nan
            row |= dict.fromkeys(
                ("peak_max", "peak_min", "peak_mean", "peak_median", "peak_rt_of_max"), nan
            )
            row |= {"peak_mass_diff_50pc": nan, "apex_time": nan}
            row["apex_intensity"] = 0.0 if len(times) else nan
        out.append(row)
    return pd.DataFrame(out)


def check(got: pd.DataFrame, want: pd.DataFrame, name: str) -> None:
    assert got["peak_label"].tolist() == want["peak_label"].tolist(), name
    for column in want.columns.drop("peak_label"):
        np.testing.assert_allclose(
            got[column].to_numpy(float),
            want[column].to_numpy(float),
            rtol=1e-9,
            atol=1e-9,
            equal_nan=True,
            err_msg=f"{name}: {column}",
        )


@pytest.mark.parametrize("source", [SMALL, METABO], ids=["small", "metabo"])
def test_quantify_agrees_with_numpy(exported, source) -> None:
    targets = targets_for(source)
    want = oracle(source, targets)
    assert (want["peak_n_datapoints"] > 0).sum() >= 8
    runs = runs_of(exported, source)
    result = quantify(runs, targets)
    assert result.attrs["failed"] == []
    assert list(result["run"].unique()) == [run.source for run in runs]
    for run in runs:
        check(result[result["run"] == run.source].reset_index(drop=True), want, run.source)


def test_quantify_on_one_thread_and_from_files(exported, tmp_path) -> None:
    targets = targets_for(SMALL, seed=3)
    csv, parquet = tmp_path / "t.csv", tmp_path / "t.parquet"
    targets.assign(note="kept").to_csv(csv, index=False)
    targets.to_parquet(parquet)
    paths = [exported.archives["small.chunked"], exported.store / "small.point"]
    with dask.config.set(scheduler="sync"):
        first = quantify(paths, csv)
    second = quantify(paths, parquet)
    pd.testing.assert_frame_equal(first, second)
    check(first.iloc[: len(targets)].reset_index(drop=True), oracle(SMALL, targets), "csv")


def test_a_hundred_thousand_targets(exported) -> None:
    """Every row is there and matches a plain computation of the same targets."""
    rng = np.random.default_rng(7)
    spectra = source_spectra(METABO)
    peaks = np.concatenate([s[2][s[3] > 0] for s in spectra if s[1] == 1])
    n = 100_000
    targets = pd.DataFrame(
        {
            "peak_label": [f"p{k}" for k in range(n)],
            "mz_mean": rng.choice(peaks, n) * (1 + rng.normal(0, 3e-6, n)),
            "mz_width": rng.uniform(2, 20, n),
            "rt_min": rng.uniform(0, 10, n),
        }
    )
    targets["rt_max"] = targets["rt_min"] + rng.uniform(0, 3, n)
    result = quantify([exported.archives["metabo.chunked"]], targets)
    assert len(result) == n and (result["peak_n_datapoints"] > 0).sum() > n // 4
    sample = targets.iloc[rng.choice(n, 150, replace=False)].assign(
        rt_unit="min", intensity_threshold=0.0, ms_level=1
    )
    got = result.set_index("peak_label").loc[sample["peak_label"]].reset_index()
    check(got, oracle(METABO, sample), "100k")


def test_ion_map_agrees_with_histogram2d(exported) -> None:
    for source in (SMALL, METABO):
        spectra = [s for s in source_spectra(source) if s[1] == 1]
        time = np.concatenate([np.full(len(s[2]), s[0]) for s in spectra])
        mz = np.concatenate([s[2] for s in spectra])
        intensity = np.concatenate([s[3] for s in spectra])
        # edges on actual values: the right edge holds its points (histogram2d's rule)
        mz_edges = np.linspace(np.quantile(mz, 0.1), mz.max(), 37)
        rt_edges = np.linspace(time.min(), np.quantile(time, 0.8), 11)
        want, _, _ = np.histogram2d(time, mz, bins=[rt_edges, mz_edges], weights=intensity)
        count, _, _ = np.histogram2d(time, mz, bins=[rt_edges, mz_edges])
        runs = runs_of(exported, source)
        image = ion_map(runs, mz_edges, rt_edges)
        assert image.dims == ("run", "rt", "mz") and image.chunks[0] == (1,) * len(runs)
        assert list(image["run"].values) == [
            r.name if k < 2 else f"{r.name}#2" for k, r in enumerate(runs)
        ]
        np.testing.assert_allclose(image["mz"], (mz_edges[1:] + mz_edges[:-1]) / 2)
        values = image.compute(scheduler="threads").values  # not a client left as the default
        assert want.sum() > 0 and count.sum() > 0
        for k, run in enumerate(runs):
            np.testing.assert_allclose(values[k], want, rtol=1e-9, atol=1e-6, err_msg=run.source)


@pytest.mark.parametrize(
    "edges",
    [np.linspace(100, 2000, 1001), [1.0, 2.0, 2.0, 3.0, 3.0], [5.0, 5.0], [-1.0, 0.0, 1e-300, 7.5]],
)
def test_bin_index_is_histogramdds_binning(edges) -> None:
    """Every value on an edge, just below and just above one, outside, NaN and infinite: each
    falls in the bin numpy.histogramdd puts it in (the last bin closed above, repeated edges
    making empty bins)."""
    edges = np.asarray(edges)
    rng = np.random.default_rng(7)
    values = np.concatenate(
        [
            edges,
            np.nextafter(edges, -np.inf),
            np.nextafter(edges, np.inf),
            rng.uniform(edges[0] - 1, edges[-1] + 1, 10_000),
            [np.nan, np.inf, -np.inf],
        ]
    )
    at = bin_index(values, edges)
    want, _ = np.histogramdd(values[:, None], bins=[edges])
    assert np.array_equal(np.bincount(at[at >= 0], minlength=len(edges) - 1), want)
    for k in np.flatnonzero(at >= 0)[::97]:  # a value's bin holds it
        assert edges[at[k]] <= values[k] <= edges[at[k] + 1]


def test_validation_names_the_row(tmp_path) -> None:
    good = pd.DataFrame(
        {
            "peak_label": ["a", "b"],
            "mz_mean": [100.0, 200.0],
            "mz_width": [10, 10],
            "rt_min": [1, 2],
            "rt_max": [2, 3],
        }
    )
    cases = {
        "no column 'mz_width'": good.drop(columns="mz_width"),
        "row 2 (peak_label 'b'): rt_min 4 > rt_max 3": good.assign(rt_min=[1, 4]),
        "row 1 (peak_label 'a'): rt_unit 'h' is neither": good.assign(rt_unit=["h", "s"]),
        "row 2 (peak_label 'b'): mz_width must be positive": good.assign(mz_width=[5, 0]),
        "row 1 (peak_label 'a'): mz_mean must be positive": good.assign(mz_mean=[-1, 5]),
        "no rows": good.iloc[:0],
    }
    for text, frame in cases.items():
        path = tmp_path / "t.csv"
        frame.to_csv(path, index=False)
        with pytest.raises(TargetsError) as info:
            quantify([], path)
        message = str(info.value)
        assert isinstance(info.value, MzPeakDaskError) and "\n" not in message
        assert message.startswith(f"{path}: ") and text in message, message


def test_a_failed_run_is_listed_and_the_others_kept(exported, tmp_path) -> None:
    targets = targets_for(SMALL)
    broken = tmp_path / "broken.mzpeak"
    good = exported.archives["small.point"]
    data = bytearray(good.read_bytes())
    broken.write_bytes(bytes(data[: len(data) // 2]))
    cut = tmp_path / "cut.mzpeak"  # opens, but its data member is garbled
    shutil_copy = bytearray(data)
    middle = len(shutil_copy) // 3
    shutil_copy[middle : middle + 4096] = bytes(4096)
    cut.write_bytes(bytes(shutil_copy))
    result = quantify([good, broken, tmp_path / "missing.mzpeak", cut], targets)
    failed = result.attrs["failed"]
    assert any(str(broken) in line for line in failed)
    assert any(str(tmp_path / "missing.mzpeak") in line for line in failed)
    assert all("\n" not in line for line in failed)
    rows = result[result["run"] == str(good)].reset_index(drop=True)
    check(rows, oracle(SMALL, targets), "good")
    assert set(result["run"]) <= {str(good), str(cut)}


def test_ion_map_of_an_unreadable_run_names_it(exported, tmp_path) -> None:
    good = exported.archives["small.point"]
    cut = tmp_path / "cut.mzpeak"
    data = bytearray(good.read_bytes())
    run = ArchiveRun(good)
    data[len(data) // 3 : len(data) // 3 + 65536] = bytes(65536)
    cut.write_bytes(bytes(data))
    try:
        image = ion_map([ArchiveRun(cut)], [0, 2000], [0, 100])
    except InputError as exc:  # the metadata already unreadable
        assert str(cut) in str(exc)
        return
    with pytest.raises(InputError, match=str(cut)):
        image.compute(scheduler="threads")
    assert len(run.spectra)


@pytest.mark.cluster
def test_quantify_and_ion_map_on_a_local_cluster(exported, local_client) -> None:
    targets = targets_for(METABO)
    runs = runs_of(exported, METABO)
    result = quantify(runs, targets, client=local_client)
    want = oracle(METABO, targets)
    for run in runs:
        check(result[result["run"] == run.source].reset_index(drop=True), want, run.source)
    image = ion_map(runs, np.linspace(100, 1000, 50), np.linspace(0, 20, 20))
    here = image.compute(scheduler="threads").values  # in this process, not on the default client
    there = local_client.compute(image.data).result(timeout=120)
    np.testing.assert_allclose(there, here, rtol=1e-12)


def test_targets_cut_into_pieces_give_the_same_figures(exported, monkeypatch) -> None:
    """Targets cut into many pieces (a few spectra each, windows overlapping the pieces'
    spectra) give the same figures as in one piece, archives and Zarr stores."""
    module = importlib.import_module("mzpeak_dask.analysis.quantify")
    targets = targets_for(METABO, count=30, seed=7)
    want = oracle(METABO, targets)
    monkeypatch.setattr(module, "GROUP_SPECTRA", 5)
    runs = runs_of(exported, METABO)
    result = quantify(runs, targets)
    for run in runs:
        check(result[result["run"] == run.source].reset_index(drop=True), want, run.source)


@pytest.fixture(scope="module")
def long_runs(tmp_path_factory):
    """small.mzML replicated 8 times over time (27 MB of mzML, 11 minutes, m/z 200 to 2000),
    converted in both layouts: archives of many row groups."""
    from mzpeak_dask import ConvertOptions, convert

    from ..conftest import INLINE
    from ..helpers.replicate import replicate

    root = tmp_path_factory.mktemp("long")
    source = root / "small_x8.mzML"
    replicate(SMALL, source, 8)
    for layout in ("point", "chunked"):
        convert(
            source, root / f"long.{layout}.mzpeak", ConvertOptions(layout=layout), cluster=INLINE
        )
    return source, root


def narrow_targets(source, count: int = 5, seed: int = 3) -> pd.DataFrame:
    """Strong peaks of MS1 spectra, 10 ppm, 6 s around their spectrum's time."""
    rng = np.random.default_rng(seed)
    ms1 = [s for s in source_spectra(source) if s[1] == 1]
    picks = [ms1[k] for k in rng.choice(len(ms1), count, replace=False)]
    return pd.DataFrame(
        {
            "peak_label": [f"n{k}" for k in range(count)],
            "mz_mean": [float(mz[np.argmax(intensity)]) for _, _, mz, intensity in picks],
            "mz_width": 10.0,
            "rt_min": [time - 0.05 for time, *_ in picks],
            "rt_max": [time + 0.05 for time, *_ in picks],
        }
    )


@pytest.mark.server
def test_narrow_targets_read_a_small_part_of_the_archive(long_runs) -> None:
    """Five narrow targets of a long run read well under a quarter of its archive (bytes the
    HTTP server sent), and give the figures of the numpy computation."""
    from ..helpers.servers import range_server

    source, root = long_runs
    targets = narrow_targets(source)
    want = oracle(source, targets.assign(rt_unit="min", intensity_threshold=0.0, ms_level=1))
    assert (want["peak_n_datapoints"] > 0).all()
    with range_server(root) as server, dask.config.set(scheduler="sync"):
        for layout in ("point", "chunked"):
            name = f"long.{layout}.mzpeak"
            server.served.reset()
            got = quantify([f"{server.url}/{name}"], targets)
            size = (root / name).stat().st_size
            assert got.attrs["failed"] == []
            check(got.drop(columns="run"), want, layout)
            assert 0 < server.served.bytes < 0.25 * size, (layout, server.served.bytes, size)
