"""A partition encoded and written by one task, with the offsets its run's plan gives: checked
against the true offsets (the counts of the partitions before it) as counts come back, in any
order, or by the task finishing a run submitted at once; a run with UV spectra has the
partitions written with a wrong guess written again, and its archive is the same bytes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from dask.utils import key_split
from distributed import get_task_stream

from mzpeak_dask import ConvertOptions, convert
from mzpeak_dask.archive.parts import next_offsets
from mzpeak_dask.encode import encode_partition
from mzpeak_dask.parallel.finish import (
    Rewrite,
    build_metadata,
    encode_to_file,
    finish_written,
    stitch_signal,
    with_plan,
)
from mzpeak_dask.parallel.offsets import Offsets
from mzpeak_dask.partition import plan_run
from mzpeak_dask.tables.file_metadata import file_sha256

from ..conftest import INLINE
from ..helpers.archives import member_digests
from ..helpers.batch_inputs import sparse_uv_mzml
from .test_finish import SMALL, SRM, UV


def _true_offsets(plan) -> tuple[list[dict[str, int]], list[dict[str, int]]]:
    """The offsets the chain of counts gives each partition, and each partition's counts."""
    offsets: dict[str, int] = {}
    chain, counts = [], []
    for partition in plan.partitions:
        encoded = encode_partition(partition, plan.spec)
        chain.append(offsets)
        counts.append(dict(encoded.counts))
        offsets = next_offsets(offsets, encoded)
    return chain, counts


def _agree(a: dict[str, int], b: dict[str, int], entities) -> bool:
    return all(a.get(e, 0) == b.get(e, 0) for e in entities)


@pytest.mark.parametrize("source, items", [(SMALL, 7), (UV, 60)], ids=["ms", "ms+uv"])
def test_guesses_checked_in_any_order_end_as_the_true_offsets(tmp_path, source, items) -> None:
    plan = plan_run(source, tmp_path, ConvertOptions(partition_items=items))
    n = len(plan.partitions)
    assert n > 3
    chain, counts = _true_offsets(plan)
    offsets = Offsets(plan)
    guessed = [offsets.guess(k) for k in range(n)]  # every partition submitted at once
    order = list(range(n))
    random.Random(7).shuffle(order)
    wrong: dict[int, dict[str, int]] = {}
    for k in order:
        for redo, true in offsets.arrived(k, counts[k]):
            assert redo not in wrong  # named once
            wrong[redo] = true
    assert offsets.checked == n
    for k in range(n):
        used = wrong.get(k, guessed[k])
        assert _agree(used, chain[k], counts[k]), k
        assert (k in wrong) == (not _agree(guessed[k], chain[k], counts[k])), k
    uv = any("wavelength spectrum" in c for c in counts)
    assert bool(wrong) == uv  # only UV spectra make a guess wrong
    for k, true in wrong.items():  # written again: its counts arrive again, nothing is named
        assert offsets.arrived(k, counts[k]) == []
        assert true == offsets.used[k]


def test_guesses_build_on_the_counts_checked(tmp_path) -> None:
    """A partition submitted after the ones before it came back is guessed from their true
    counts: only the partitions still out are taken from the plan."""
    plan = plan_run(UV, tmp_path, ConvertOptions(partition_items=60))
    chain, counts = _true_offsets(plan)
    offsets = Offsets(plan)
    for k in range(3):
        offsets.guess(k)
    for k in range(3):
        offsets.arrived(k, counts[k])
    assert offsets.guess(3) == {e: v for e, v in chain[3].items()}


def test_a_run_with_uv_spectra_writes_about_a_window_of_partitions_again(tmp_path) -> None:
    """Submitted three at a time, as the coordinator's window does, and coming back in order:
    the partitions after those where UV spectra start are predicted from them."""
    plan = plan_run(UV, tmp_path, ConvertOptions(partition_items=60))
    chain, counts = _true_offsets(plan)
    offsets, window = Offsets(plan), 3
    out, wrong = [], []
    for k in range(len(plan.partitions)):
        out.append(k)
        offsets.guess(k)
        if len(out) == window:
            wrong += offsets.arrived(out.pop(0), counts[k - window + 1])
    for k in out:
        wrong += offsets.arrived(k, counts[k])
    assert 0 < len(wrong) <= window
    for k, true in wrong:
        assert _agree(true, chain[k], counts[k])


def test_only_a_plan_whose_sample_holds_uv_spectra_doubts_its_guesses(tmp_path) -> None:
    """UV spectra share the spectra's item range and are numbered apart: a run whose sample
    holds some is followed partition by partition; any other goes out at once."""
    sure = {}
    for source in (SMALL, UV, SRM):
        plan = plan_run(source, tmp_path, ConvertOptions(partition_items=60))
        sure[source.name] = Offsets(plan).surely_right
        assert ("wavelength spectrum" in plan.sampled) != sure[source.name]
    assert list(sure.values()) == [True, False, True]


def test_the_finishing_task_sends_back_what_was_written_with_a_wrong_guess(tmp_path) -> None:
    """A run submitted at once whose guesses were wrong after all (UV spectra its plan's
    sample missed: here every partition guessed as the plan alone guesses): the finishing
    task checks each partition's offsets against the counts before it and, finding some
    wrong, finishes nothing and hands back what the partitions' tasks returned, their parts
    left in place; with right guesses it finishes the run."""
    options = ConvertOptions(partition_items=60)
    staging = tmp_path / "staging"
    staging.mkdir()
    plan = plan_run(UV, staging, options)
    chain, counts = _true_offsets(plan)
    offsets = Offsets(plan)
    used = [offsets.guess(k) for k in range(len(plan.partitions))]
    written = [
        encode_to_file(str(staging), partition, plan.spec, guess)
        for partition, guess in zip(plan.partitions, used, strict=True)
    ]
    wrong = [k for k in range(len(used)) if not _agree(used[k], chain[k], counts[k])]
    assert 0 < len(wrong) < len(used)
    output = tmp_path / "uv.mzpeak"
    args = (str(UV), str(output), options, plan, str(staging), written, used)
    sent_back = _finished_in_halves(*args, None)
    assert isinstance(sent_back, Rewrite) and sent_back.written == written
    assert sorted(staging.iterdir()) == sorted(Path(path) for path, _, _ in written)
    for k in wrong:  # written again with the true offsets, as the coordinator has them written
        written[k] = encode_to_file(str(staging), plan.partitions[k], plan.spec, chain[k])
        used[k] = chain[k]
    result, archive, _ = _finished_in_halves(*args, file_sha256(UV))
    expected = tmp_path / "inline.mzpeak"
    convert(UV, expected, options, cluster=INLINE)
    assert member_digests(Path(archive)) == member_digests(expected)
    assert result.wavelength_spectra > 0
    assert _finished_in_halves(*args, None)[1] == archive  # a rerun: the kept outcome


def _finished_in_halves(source, output, options, plan, staging, written, used, sha256):
    """What the tasks finishing a run sent out at once give (its archive's two halves, then
    the task closing it), run here one after another."""
    given = (options, plan, staging, written, used)
    signal = stitch_signal(output, *given)
    metadata = build_metadata(source, *given, sha256)
    return finish_written(source, output, options, plan, staging, written, False, signal, metadata)


@pytest.mark.cluster
@pytest.mark.slow
def test_uv_spectra_the_sample_missed_are_written_again_side_by_side(local_client, tmp_path):
    """A run whose few UV spectra its plan's sample missed goes out at once; its finishing
    task finds the partitions after the first UV spectrum written with wrong offsets and sends
    the run back, those partitions are written again in parallel, and a second finishing task
    writes the archive written in this process. Progress counts each item once."""
    uv_at = {10, 40, 70, 100, 130, 160, 190}
    source = sparse_uv_mzml(tmp_path / "sparse-uv.mzML", 200, uv_at)
    options = ConvertOptions(partition_items=20)
    plan = plan_run(source, tmp_path, options)
    assert len(plan.partitions) == 10 and Offsets(plan).surely_right  # the sample missed them
    heard: list[int] = []
    output = tmp_path / "sparse-uv.mzpeak"
    with get_task_stream(local_client) as stream:
        result = convert(
            source, output, options, client=local_client, progress=lambda _, d, t: heard.append(d)
        )
    kinds = [key_split(t["key"]) for t in stream.data]
    assert kinds.count("finish_written") == kinds.count("finish_run") == 1
    assert kinds.count("encode_to_file") == 10 + 9  # all but the first partition again
    assert (result.spectra, result.wavelength_spectra) == (193, 7)
    assert heard == sorted(heard) and heard[-1] == 200 and heard.count(200) <= 2
    expected = tmp_path / "inline.mzpeak"
    convert(source, expected, options, cluster=INLINE)
    assert member_digests(output) == member_digests(expected)


@pytest.mark.cluster
@pytest.mark.slow
def test_a_run_finished_on_workers_takes_one_task_a_partition(local_client, tmp_path) -> None:
    """MS spectra only: one task a partition, none written twice (the chromatograms by the
    plan's task); with UV spectra, the partitions written with a wrong guess are written again,
    and both archives are the ones written in this process."""
    for source, items in ((SMALL, 7), (UV, 60)):
        options = ConvertOptions(partition_items=items)
        plan = plan_run(source, tmp_path, options)
        assert len(with_plan(plan, options.partition_bytes)) == 1
        partitions = len(plan.partitions) - 1
        output = tmp_path / f"{source.stem}.mzpeak"
        with get_task_stream(local_client) as stream:
            convert(source, output, options, client=local_client)
        kinds = [key_split(t["key"]) for t in stream.data]
        assert "encode_partition" not in kinds and "next_offsets" not in kinds
        written = kinds.count("encode_to_file")
        if source == SMALL:  # all at once: the finishing task checks the offsets
            assert written == partitions
            assert kinds.count("finish_written") == 1 and "finish_run" not in kinds
        else:  # its sample holds UV spectra: the counts come back here to be checked
            assert partitions < written < 2 * partitions
            assert kinds.count("finish_run") == 1 and "finish_written" not in kinds
        expected = tmp_path / f"inline-{output.name}"
        convert(source, expected, options, cluster=INLINE)
        assert member_digests(output) == member_digests(expected)
