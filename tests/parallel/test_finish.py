"""Runs finished on workers: when the workers see the output folder, the last task of a run,
on a worker, writes the whole archive from the partitions' parts left in the staging folder
(and, in a batch, checks it in the same task); the coordinator only renames it into place."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from dask.utils import key_split
from distributed import get_task_stream

from mzpeak_dask import ClusterOptions, ConvertOptions, convert, convert_many
from mzpeak_dask import vocabulary as V
from mzpeak_dask.archive import staging
from mzpeak_dask.archive.parts import next_offsets, write_partition
from mzpeak_dask.archive.staging import Folder
from mzpeak_dask.archive.writer import ArchiveWriter, close_archive
from mzpeak_dask.batch.runner import run_batch
from mzpeak_dask.contracts import RunPlan
from mzpeak_dask.encode import encode_partition
from mzpeak_dask.errors import MzPeakDaskError
from mzpeak_dask.parallel import handoff
from mzpeak_dask.parallel.executors import InlineExecutor, Task
from mzpeak_dask.parallel.finish import (
    FINISHED,
    FOLDED_SHARE,
    FinishedRun,
    PlannedRun,
    build_metadata,
    finish_run,
    finish_written,
    plan_or_finish,
    stitch_signal,
    with_plan,
    write_to_file,
)
from mzpeak_dask.parallel.scheduler import Coordinator
from mzpeak_dask.partition import plan_run
from mzpeak_dask.tables.file_metadata import file_sha256

from ..conftest import BUNDLED, DATA, INLINE
from ..helpers.archives import member_digests

SMALL = BUNDLED / "small.mzML"
# MS and UV spectra, and chromatograms
UV = DATA / "HUPO-PSI_mzPeak" / "TOFsulfasMS4GHzDualMode+DADSpectra+UVSignal272-NoProfile.mzML"
THREE = DATA / "mzdata" / "three_test_scans.mzML"  # three spectra and a TIC
TINY = DATA / "pyteomics" / "tiny.pwiz.1.1.mzML"
SRM = DATA / "dialignr" / "PestMix1_8Step1Plasma1SWATH20-50.chrom.mzML"  # 252 chromatograms


def _tasks(client, call) -> set[str]:
    """The kinds of task (function names) the cluster ran during ``call()``."""
    with get_task_stream(client) as stream:
        call()
    return {key_split(t["key"]) for t in stream.data}


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.parametrize("unpacked", [False, True], ids=["zip", "folder"])
def test_runs_finish_on_workers_with_the_archive_written_here(
    local_client, tmp_path, unpacked
) -> None:
    options = ConvertOptions(partition_items=7, unpacked=unpacked)
    jobs = [(s, tmp_path / f"{k}.mzpeak") for k, s in enumerate([SMALL, UV])]
    results: list = []
    kinds = _tasks(
        local_client, lambda: results.extend(convert_many(jobs, options, client=local_client))
    )
    # small.mzML's partitions go out at once; the UV run's, whose sample holds UV spectra,
    # as their counts come back
    assert {"finish_written", "finish_run", "encode_to_file"} <= kinds
    assert "write_partition" not in kinds  # no part came back to be stitched here
    for (source, output), result in zip(jobs, results, strict=True):
        expected = tmp_path / f"inline-{output.name}"
        convert(source, expected, options, cluster=INLINE)
        assert result.inspection is None  # checks are for a batch
        assert result.output_bytes == _size(expected) == _size(output)
        names = sorted(p.name for p in expected.iterdir()) if unpacked else None
        if unpacked:
            assert sorted(p.name for p in output.iterdir()) == names
            for name in names:
                assert (output / name).read_bytes() == (expected / name).read_bytes(), name
        else:
            assert member_digests(output) == member_digests(expected)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir()) if path.is_dir() else path.stat().st_size


@pytest.mark.cluster
@pytest.mark.slow
def test_a_batch_checks_each_run_in_the_task_that_finishes_it(local_client, tmp_path) -> None:
    """Runs that fan out (here 3 partitions of spectra each) too."""
    source = tmp_path / "in"
    source.mkdir()
    for name in ("a", "b"):
        shutil.copy(SMALL, source / f"{name}.mzML")
    outcome: list = []
    options = ConvertOptions(partition_items=20)
    kinds = _tasks(
        local_client,
        lambda: outcome.append(run_batch(source, tmp_path / "out", options, client=local_client)),
    )
    assert "finish_written" in kinds
    assert "inspect_output" not in kinds  # one round trip fewer per run
    records = outcome[0].records
    assert [r["status"] for r in records] == ["converted", "converted"]
    for record in records:
        assert record["members"] == member_digests(Path(record["output"]))
        assert len(record["tic"]) == 14  # the 14 MS1 spectra of small.mzML


def test_finishing_again_after_a_lost_worker_writes_the_same_archive(tmp_path) -> None:
    """Dask reruns the finishing task if its worker dies: before it finished, the rerun
    starts afresh from the parts and writes the same bytes; after, the parts are gone (the
    task removes them on its worker) and the rerun gives the outcome that attempt kept."""
    options = ConvertOptions(partition_items=9)
    staging = tmp_path / "staging"
    staging.mkdir()
    plan, parts = _written_parts(SMALL, options, staging)
    output = tmp_path / "small.mzpeak"
    args = (str(SMALL), str(output), options, plan, str(staging), parts, file_sha256(SMALL))
    copies = [tmp_path / f"copy-{k}" for k in range(len(parts))]
    for part, copy in zip(parts, copies, strict=True):
        shutil.copy(part, copy)
    first, archive, inspection = finish_run(*args, True)
    assert not any(Path(p).exists() for p in parts)
    kept = tmp_path / "first.mzpeak"
    shutil.copy(archive, kept)
    assert finish_run(*args, True) == (first, archive, inspection)
    (staging / FINISHED).unlink()  # the worker lost before it finished: the parts are there
    for part, copy in zip(parts, copies, strict=True):
        shutil.copy(copy, part)
    again, archive, _ = finish_run(*args, False)
    assert member_digests(Path(archive)) == member_digests(kept)
    assert again == first and first.spectra == 48
    assert inspection["errors"] == [] and inspection["members"] == member_digests(kept)
    expected = tmp_path / "inline.mzpeak"
    convert(SMALL, expected, options, cluster=INLINE)
    assert member_digests(kept) == member_digests(expected)
    assert not output.exists()  # the coordinator renames it into place


@pytest.mark.parametrize("unpacked", [False, True], ids=["zip", "folder"])
def test_the_finishing_task_leaves_only_the_archive_and_the_parts(tmp_path, unpacked) -> None:
    """The writer's scratch files (metadata spills, staged members), the task's own folder and
    the parts are removed by the task that finishes the run, on its worker: the coordinator,
    which removes the staging folder, then has the archive left, and the outcome the task
    kept for a rerun."""
    options = ConvertOptions(partition_items=9, unpacked=unpacked)
    staging = tmp_path / "staging"
    staging.mkdir()
    plan, parts = _written_parts(UV, options, staging)
    output = tmp_path / "uv.mzpeak"
    args = (str(UV), str(output), options, plan, str(staging), parts, file_sha256(UV))
    _, archive, inspection = finish_run(*args, True)
    assert inspection["errors"] == []
    assert sorted(staging.iterdir()) == sorted([Path(archive), staging / FINISHED])
    expected = tmp_path / "inline.mzpeak"
    convert(UV, expected, options, cluster=INLINE)
    if unpacked:
        assert sorted(p.name for p in Path(archive).iterdir()) == sorted(
            p.name for p in expected.iterdir()
        )
    else:
        assert member_digests(Path(archive)) == member_digests(expected)


def _fanned_out(source: Path, output: Path, options: ConvertOptions, staging: Path, check: bool):
    """The archive of ``source`` written by the tasks a larger run fans out into: the plan,
    each partition encoded and written to a file with the offsets of those before it, then
    the finishing task."""
    plan, parts = _written_parts(source, options, staging)
    args = (str(source), str(output), options, plan, str(staging), parts, file_sha256(source))
    return finish_run(*args, check)


def _written_parts(source: Path, options: ConvertOptions, staging: Path) -> tuple:
    """The plan of ``source`` and its partitions' part files, each encoded and written with the
    offsets of those before it, as the fanned-out tasks write them."""
    plan = plan_run(source, staging, options)
    offsets: dict[str, int] = {}
    parts = []
    for partition in plan.partitions:
        encoded = encode_partition(partition, plan.spec)
        parts.append(write_to_file(str(staging), encoded, offsets, plan.spec)[0])
        offsets = next_offsets(offsets, encoded)
    return plan, parts


@pytest.mark.parametrize("source", [SMALL, UV, THREE], ids=["ms+tic", "ms+uv+chrom", "three"])
def test_a_small_run_finished_in_its_plan_task_writes_the_fanned_out_bytes(
    tmp_path, source
) -> None:
    """A run of at most one partition of spectra and one of chromatograms is planned,
    encoded, written and finished (and checked, in a batch) by one task: the same archive,
    result and inspection as the fanned-out tasks, byte for byte."""
    options = ConvertOptions()
    output = tmp_path / "run.mzpeak"
    fused_staging, fanned_staging = tmp_path / "fused", tmp_path / "fanned"
    fused_staging.mkdir()
    fanned_staging.mkdir()
    fused = plan_or_finish(str(source), str(output), options, str(fused_staging), True)
    assert isinstance(fused, FinishedRun)
    result, archive, inspection = _fanned_out(source, output, options, fanned_staging, True)
    assert member_digests(Path(fused.archive)) == member_digests(Path(archive))
    assert fused.result == result
    assert fused.inspection == inspection and inspection["errors"] == []
    items = sum(len(p.items) for p in plan_run(source, fanned_staging, options).partitions)
    assert fused.items == items >= result.spectra + result.chromatograms  # UV spectra too
    assert Path(fused.archive).parent == fused_staging  # renamed by the coordinator
    assert not output.exists()


def test_a_run_of_several_partitions_of_a_kind_gets_its_plan_back(tmp_path) -> None:
    """Larger runs fan out: the plan task returns the plan, having written only the run's
    chromatograms (one small partition), with the offsets the plan gives them."""
    options = ConvertOptions(partition_items=20)  # 48 spectra: 3 partitions' worth, cut as 4
    planned = plan_or_finish(
        str(SMALL), str(tmp_path / "small.mzpeak"), options, str(tmp_path), False
    )
    assert isinstance(planned, PlannedRun) and isinstance(planned.plan, RunPlan)
    plan = planned.plan
    assert [p.items.kind for p in plan.partitions] == ["spectrum"] * 4 + ["chromatogram"]
    assert list(planned.written) == [4]
    path, items, counts, used = planned.written[4]
    assert (items, counts, used) == (1, {"chromatogram": 1}, {"spectrum": 48})
    assert list(tmp_path.iterdir()) == [Path(path)]
    encoded = encode_partition(plan.partitions[4], plan.spec)
    assert handoff.load(path) == write_partition(encoded, used, plan.spec)


def test_many_chromatograms_keep_their_own_tasks(tmp_path) -> None:
    """An SRM run's chromatograms are its data: when they are more than a small share of a
    partition, or more than one partition, the plan task writes none of them."""
    plan = plan_run(SRM, tmp_path, ConvertOptions(partition_items=40))
    chromatograms = [n for n, p in enumerate(plan.partitions) if p.items.kind == "chromatogram"]
    assert len(chromatograms) > 1 and with_plan(plan, 8 << 20) == []
    plan = plan_run(SRM, tmp_path, ConvertOptions())
    (n,) = [n for n, p in enumerate(plan.partitions) if p.items.kind == "chromatogram"]
    items = plan.partitions[n].items
    span = items.byte_stop - items.byte_start
    assert with_plan(plan, span * FOLDED_SHARE) == [n]
    assert with_plan(plan, span * FOLDED_SHARE - FOLDED_SHARE) == []


@pytest.mark.cluster
def test_a_fanned_out_runs_chromatograms_cost_no_task_of_their_own(local_client, tmp_path):
    """A run that fans out costs its plan, one task a partition of spectra and its finish: the
    chromatograms were written by the plan's task. The archive is the one written here."""
    options = ConvertOptions(partition_items=20)
    output, expected = tmp_path / "small.mzpeak", tmp_path / "inline.mzpeak"
    heard: list[int] = []
    with get_task_stream(local_client) as stream:
        result = convert(
            SMALL, output, options, client=local_client, progress=lambda _, d, t: heard.append(d)
        )
    kinds = sorted(key_split(t["key"]) for t in stream.data)
    assert kinds.count("encode_to_file") == 4  # the 4 partitions of spectra
    assert kinds.count("plan_or_finish") == kinds.count("finish_written") == 1
    # progress partition by partition, though no partition's result comes back here: the
    # chromatogram its plan's task wrote, then each partition of 12 spectra as it finishes
    assert heard == [1, 13, 25, 37, 49, 49]
    assert result.chromatograms == 1
    convert(SMALL, expected, options, cluster=INLINE)
    assert member_digests(output) == member_digests(expected)


@pytest.mark.cluster
@pytest.mark.slow
def test_a_small_run_costs_the_cluster_one_task(local_client, tmp_path) -> None:
    """Most files of a repository: one task each, on a worker, whose archive equals the one
    written in this process; in a batch, that task also checks it."""
    jobs = [(s, tmp_path / f"{s.stem}.mzpeak") for s in (THREE, TINY)]
    results: list = []
    with get_task_stream(local_client) as stream:
        results.extend(convert_many(jobs, ConvertOptions(), client=local_client))
    assert sorted(key_split(t["key"]) for t in stream.data) == ["plan_or_finish"] * 2
    for (source, output), result in zip(jobs, results, strict=True):
        expected = tmp_path / f"inline-{output.name}"
        convert(source, expected, cluster=INLINE)
        assert member_digests(output) == member_digests(expected)
        assert result.output_bytes == expected.stat().st_size and result.inspection is None
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    source = tmp_path / "in"
    source.mkdir()
    for path, _ in jobs:
        shutil.copy(path, source / path.name)
    with get_task_stream(local_client) as stream:
        outcome = run_batch(source, tmp_path / "out", client=local_client)
    assert sorted(key_split(t["key"]) for t in stream.data) == ["plan_or_finish"] * 2
    for record in outcome.records:
        assert record["status"] == "converted"
        assert record["members"] == member_digests(Path(record["output"]))


@pytest.mark.cluster
def test_the_coordinator_removes_a_finished_runs_staging_folder_without_walking_it(
    local_client, tmp_path, monkeypatch
) -> None:
    """A small run finished on a worker leaves its staging folder holding only the lock this
    process holds: removing it takes an unlink and a rmdir here, not a walk of the tree."""
    walked: list[str] = []
    rmtree = staging.shutil.rmtree

    def counted(path, *args, **kwargs):
        walked.append(str(path))
        return rmtree(path, *args, **kwargs)

    monkeypatch.setattr(staging.shutil, "rmtree", counted)
    jobs = [(s, tmp_path / f"{s.stem}.mzpeak") for s in (THREE, TINY)]
    results = convert_many(jobs, ConvertOptions(), client=local_client)
    assert [r.spectra for r in results] == [3, 4]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(o.name for _, o in jobs)
    assert walked == []


@pytest.mark.cluster
@pytest.mark.slow
def test_outputs_in_many_folders_probe_the_workers_once(local_client, tmp_path, monkeypatch):
    """Whether the workers see an output folder takes a round trip to every worker: outputs in
    several folders of one file system are answered by one probe of the folder holding them
    all, and their runs still finish on the workers."""
    from mzpeak_dask.parallel import handoff

    probed: list[Path] = []
    real = handoff.visible_to_workers

    def counted(client, folder):
        probed.append(folder)
        return real(client, folder)

    monkeypatch.setattr(handoff, "visible_to_workers", counted)
    jobs = [(SMALL, tmp_path / f"folder{k}" / "small.mzpeak") for k in range(3)]
    for _, output in jobs:
        output.parent.mkdir()
    results: list = []
    kinds = _tasks(
        local_client,
        lambda: results.extend(convert_many(jobs, ConvertOptions(), client=local_client)),
    )
    assert probed == [tmp_path]
    assert "plan_or_finish" in kinds
    assert [r.spectra for r in results] == [48] * 3
    assert all(output.is_file() for _, output in jobs)


@pytest.mark.cluster
def test_a_fanned_out_run_is_hashed_where_its_plan_ran_and_finished_there(
    local_client, tmp_path
) -> None:
    """A local input whose run fans out and a worker finishes is hashed by a thread its plan's
    task starts (:mod:`~mzpeak_dask.parallel.early_hash`), not by a task of its own that would
    make one worker start its partitions late; the finishing task runs on that worker, and the
    archive records the input's SHA-256."""
    options = ConvertOptions(partition_bytes=1 << 20)  # small.mzML (3.4 MB) is larger
    for _ in range(3):  # wherever the plan lands
        with get_task_stream(local_client) as stream:
            result = convert(SMALL, tmp_path / "small.mzpeak", options, client=local_client)
        ran = {key_split(t["key"]): t["worker"] for t in stream.data}
        assert "file_sha256" not in ran
        assert "encode_to_file" in ran
        assert ran["finish_written"] == ran["plan_or_finish"] == ran["build_metadata"]
        assert ran["stitch_signal"] != ran["plan_or_finish"]  # the halves, side by side
        assert result.input_sha256 == file_sha256(SMALL)
        (tmp_path / "small.mzpeak").unlink()


def test_finishing_hashes_the_input_when_not_given_its_digest(tmp_path) -> None:
    """``finish_run`` given no digest hashes the input itself, beside the stitching; a
    failure to hash fails the run, and no archive is left."""
    options = ConvertOptions(partition_items=9)
    staging = tmp_path / "staging"
    staging.mkdir()
    plan, parts = _written_parts(SMALL, options, staging)
    kept = [Path(p).read_bytes() for p in parts]
    args = (str(tmp_path / "out.mzpeak"), options, plan, str(staging), parts, None, False)
    gone = tmp_path / "gone.mzML"  # removed after planning: hashing fails
    with pytest.raises(FileNotFoundError, match="gone.mzML"):
        finish_run(str(gone), *args)
    left = sorted(p.relative_to(staging) for p in staging.rglob("*") if p.is_file())
    assert left == sorted(Path(p).relative_to(staging) for p in parts)  # no archive
    assert [Path(p).read_bytes() for p in parts] == kept
    result, archive, _ = finish_run(str(SMALL), *args)
    assert result.input_sha256 == file_sha256(SMALL)
    assert Path(archive).is_file()


def test_the_input_digest_is_awaited_once_the_data_members_are_written(tmp_path) -> None:
    """The finishing task hashes beside its own work and asks for the digest only once the
    data members and the spectrum metadata's rows are written, so the hash overlaps the
    stitching: the digest is asked for once, with the data members in the container, and
    recorded as given."""
    options = ConvertOptions(partition_items=20, unpacked=True)  # members readable as files
    staging = tmp_path / "staging"
    staging.mkdir()
    plan, parts = _written_parts(UV, options, staging)
    folder = staging / "finish"
    folder.mkdir()
    writer = ArchiveWriter(UV, tmp_path / "uv.mzpeak", options, plan, Folder(folder))
    for part in parts:
        writer.add(handoff.load(part))
    asked: list[list[str]] = []

    def digest() -> str:
        asked.append([name for name, _ in writer.container.members])
        return "ab" * 32

    result = writer.close(digest)
    data = V.MEMBER_NAMES[(V.SPECTRUM, V.DATA_ARRAYS)]
    assert len(asked) == 1 and data in asked[0]
    assert V.MEMBER_NAMES[(V.SPECTRUM, V.METADATA)] not in asked[0]  # its footer holds it
    assert result.input_sha256 == "ab" * 32
    footer = pq.read_schema(Path(writer.path) / V.MEMBER_NAMES[(V.SPECTRUM, V.METADATA)])
    assert b"ab" * 32 in footer.metadata[b"file_description"]


def _archive_bytes(path: Path) -> dict[str, bytes]:
    if path.is_dir():
        return {p.name: p.read_bytes() for p in sorted(path.iterdir())}
    return {"": path.read_bytes()}


@pytest.mark.parametrize("unpacked", [False, True], ids=["zip", "folder"])
@pytest.mark.parametrize("source", [SMALL, UV], ids=["ms+tic", "ms+uv+chrom"])
def test_an_archive_written_in_halves_is_the_archive_written_whole(
    tmp_path, source, unpacked
) -> None:
    """The spectrum signal (:func:`stitch_signal`) and the other members
    (:func:`build_metadata`), written apart from the same parts and closed by
    :func:`finish_written`, make the bytes :func:`finish_run` writes in one task; closing
    the same halves a second time (an attempt whose worker died) gives those bytes again."""
    options = ConvertOptions(partition_items=20, unpacked=unpacked)
    output = tmp_path / "run.mzpeak"
    digest = file_sha256(source)
    whole_staging, halves_staging = tmp_path / "whole", tmp_path / "halves"
    whole_staging.mkdir()
    halves_staging.mkdir()
    plan, parts = _written_parts(source, options, whole_staging)
    expected, whole, _ = finish_run(
        str(source), str(output), options, plan, str(whole_staging), parts, digest, False
    )
    plan, parts = _written_parts(source, options, halves_staging)
    assert len(parts) > 2
    written, used, offsets = [], [], {}
    for path in parts:
        part = handoff.load(path)
        written.append((path, sum(part.counts.values()), dict(part.counts)))
        used.append(dict(offsets))
        offsets = next_offsets(offsets, part)
    given = (options, plan, str(halves_staging), written, used)
    signal = stitch_signal(str(output), *given)
    metadata = build_metadata(str(source), *given, digest)
    at = halves_staging / Path(whole).name
    first = close_archive(source, output, options, plan, at, signal, metadata)
    assert _archive_bytes(at) == _archive_bytes(Path(whole))
    result, halves, _ = finish_written(
        str(source),
        str(output),
        options,
        plan,
        str(halves_staging),
        written,
        False,
        signal,
        metadata,
    )
    assert Path(halves) == at
    assert _archive_bytes(at) == _archive_bytes(Path(whole))
    assert result == first == expected
    left = sorted(p.name for p in halves_staging.iterdir())
    assert left == sorted([FINISHED, Path(halves).name])  # parts and scratch are gone


class FinishedHere(InlineExecutor):
    """Runs finished as they are on workers that see the staging folder, in this process;
    the task writing the half named ``failing`` fails as a full disk would fail it."""

    def __init__(self, failing: str) -> None:
        super().__init__()
        self.failing = failing
        self.ran: list[str] = []

    def handoff_folder(self, staging: Path) -> str | None:
        return str(staging)

    def submit(self, tag, fn, *args, **where) -> Task:
        self.ran.append(fn.__name__)
        if fn.__name__ == self.failing:
            return Task(tag, error=OSError(errno.ENOSPC, "No space left on device"))
        return super().submit(tag, fn, *args, **where)


@pytest.mark.parametrize("failing", ["stitch_signal", "build_metadata"])
def test_a_run_whose_half_fails_fails_alone_and_leaves_nothing(tmp_path, failing) -> None:
    """Either half of a fanned-out run's archive failing fails that run, with one line naming
    its output, and leaves neither the archive nor a staging folder; the next run of the
    same call converts."""
    options = ConvertOptions(partition_items=20)
    executor = FinishedHere(failing)
    coordinator = Coordinator(
        executor, options, ClusterOptions(cluster="inline"), None, False, None
    )
    jobs = [(SMALL, tmp_path / "a.mzpeak"), (THREE, tmp_path / "b.mzpeak")]
    failed, converted = coordinator.run(jobs)
    assert {"stitch_signal", "build_metadata", "finish_written"} <= set(executor.ran)
    assert isinstance(failed, MzPeakDaskError)
    assert str(tmp_path / "a.mzpeak") in str(failed) and "\n" not in str(failed)
    assert "No space left" in str(failed)
    assert converted.spectra == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.mzpeak"]
