"""Twenty S3 batches and conversions in a row, on 2 workers, each of which must end
(a generous bound; a hang is a failure showing what the command printed) with every archive
at its key and readable, and ``batch_report.json`` counting them: fresh batches, batches
resumed after the previous one was killed (SIGKILL) while it ran, two batches at once into
different prefixes, and a batch and a conversion one of whose workers is killed.

All twenty run on s3rver, which keeps connections alive as real stores do (moto's server,
which closes every connection after its answer, runs fewer of them). A successful command
prints no traceback, and none of asyncio's ``Task exception was never retrieved``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from mzpeak_dask import convert, open_archive

from ..conftest import DATA, INLINE
from ..helpers.servers import S3RVER_KEY, new_bucket, s3_client, s3rver_options

pytestmark = [
    pytest.mark.slow,
    pytest.mark.cluster,
    pytest.mark.skipif(sys.platform != "linux", reason="finds the workers through /proc"),
]

BOUND = 240  # seconds a command of these few small inputs may take at most (about 10 here)
INPUTS = [
    "openms/FileFilter_37_output.mzML",
    "pyteomics/tiny.pwiz.1.1.mzML",
    "openms/MzMLFile_1.mzML",
    "ms_deisotope/only_ms2_mzml.mzML",
]
KILLED_RUN = "openms/TargetedSpectraExtractor_13C1_spectra0to100.mzML"  # 100 spectra
WORKERS = ["--workers", "2", "--memory-limit", "1GB"]


class Store:
    """A bucket, the storage options that reach it, an S3 client of it, and how many rounds
    of each kind the tests run there."""

    def __init__(self, client, bucket: str, options: dict, rounds: dict[str, int]):  # noqa: ANN001
        self.client, self.bucket, self.options, self.rounds = client, bucket, options, rounds
        self.source = f"soak-{uuid.uuid4().hex[:8]}"
        self.expected: dict[str, tuple[int, int]] = {}  # input -> (spectra, chromatograms)
        self.expected_run = (0, 0)

    def keys(self, prefix: str) -> set[str]:
        listed = self.client.list_objects_v2(Bucket=self.bucket, Prefix=f"{prefix}/")
        return {entry["Key"] for entry in listed.get("Contents", [])}

    def report(self, prefix: str) -> dict:
        answer = self.client.get_object(Bucket=self.bucket, Key=f"{prefix}/batch_report.json")
        return json.loads(answer["Body"].read())

    def url(self, *names: str) -> str:
        return "/".join([f"s3://{self.bucket}/{self.source}", *names])


# 20 commands on s3rver (fresh batches; pairs of a killed batch and its resume; pairs of
# batches at once; a batch and a conversion losing a worker), fewer on moto
ROUNDS = {"fresh": 8, "resumed": 3, "together": 2}
FEWER = {"fresh": 2, "resumed": 1, "together": 1}


@pytest.fixture(scope="module", params=["s3rver", "moto"])
def store(request, tmp_path_factory) -> Store:
    """A bucket holding the inputs under ``in/`` (one folder each) and a larger run under
    ``run/``, with the spectra and chromatograms each one's local conversion holds."""
    if request.param == "s3rver":
        import boto3
        from botocore.config import Config

        endpoint = request.getfixturevalue("s3rver_endpoint")
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            aws_access_key_id=S3RVER_KEY,
            aws_secret_access_key=S3RVER_KEY,
            region_name="us-east-1",
            config=Config(s3={"addressing_style": "path"}),
        )
        store = Store(client, "s3rver-runs", s3rver_options(endpoint), ROUNDS)
    else:  # the AWS environment points this process and the commands at moto
        endpoint = request.getfixturevalue("s3_endpoint")
        store = Store(s3_client(endpoint), new_bucket(endpoint), {}, FEWER)
    local = tmp_path_factory.mktemp("local")
    for k, name in enumerate(INPUTS):
        relative = f"{k}/{Path(name).stem}"
        key = f"{store.source}/in/{relative}.mzML"
        store.client.upload_file(str(DATA / name), store.bucket, key)
        result = convert(DATA / name, local / f"{k}.mzpeak", cluster=INLINE)
        store.expected[relative] = (result.spectra, result.chromatograms)
    store.client.upload_file(str(DATA / KILLED_RUN), store.bucket, f"{store.source}/run/big.mzML")
    result = convert(DATA / KILLED_RUN, local / "run.mzpeak", cluster=INLINE)
    store.expected_run = (result.spectra, result.chromatograms)
    return store


class Command:
    """``mzpeak-dask ARGS`` started in a process of its own, what it prints kept in a file."""

    def __init__(self, store: Store, tmp_path: Path, *args: str):
        self.log = tmp_path / f"stderr-{uuid.uuid4().hex[:8]}.txt"
        env = {**os.environ, "PYTHONPATH": os.getcwd()}
        command = [sys.executable, "-m", "mzpeak_dask", *args]
        command += ["--storage-options", json.dumps(store.options)]
        with open(self.log, "w") as err:
            self.process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=err, env=env, text=True
            )
        self.started = time.monotonic()

    @property
    def stderr(self) -> str:
        return self.log.read_text()

    def wait_for(self, text: str) -> bool:
        """Until the command prints ``text`` (True) or ends (False)."""
        while self.process.poll() is None:
            if text in self.stderr:
                return True
            self._bounded()
            time.sleep(0.05)
        return False

    def workers(self) -> list[int]:
        """The worker processes (started by the command, from its thread of Dask's loop: its
        children, whichever thread started them, but for multiprocessing's resource tracker)."""
        found = []
        for children in Path(f"/proc/{self.process.pid}/task").glob("*/children"):
            try:
                for pid in children.read_text().split():
                    command = Path(f"/proc/{pid}/cmdline").read_bytes()
                    if b"resource_tracker" not in command:
                        found.append(int(pid))
            except OSError:  # a thread or a process that ended meanwhile
                pass
        return sorted(found)

    def kill_a_worker(self) -> bool:
        """Once the command converts on its workers, SIGKILL one of them (False if it ended
        first)."""
        while self.wait_for("converting "):
            workers = self.workers()
            if workers:
                os.kill(workers[0], signal.SIGKILL)
                return True
            time.sleep(0.05)
        return False

    def kill(self) -> None:
        """SIGKILL, as an out-of-memory killer or a scheduler's hard stop does."""
        workers = self.workers()
        self.process.kill()
        self.process.wait(timeout=60)
        for pid in workers:  # orphaned workers of a killed command: nothing of its batch
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def end(self) -> int:
        """Its exit status; a command still running after :data:`BOUND` fails the test."""
        try:
            return self.process.wait(timeout=max(1.0, BOUND - self._elapsed()))
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"the command hung (over {BOUND} s); it printed:\n{self.stderr}")

    def succeeded(self) -> None:
        """It ended at once with status 0, printing no traceback."""
        status = self.end()
        assert status == 0, self.stderr
        assert "Traceback" not in self.stderr, self.stderr
        assert "never retrieved" not in self.stderr, self.stderr

    def _elapsed(self) -> float:
        return time.monotonic() - self.started

    def _bounded(self) -> None:
        if self._elapsed() > BOUND:
            self.kill()
            pytest.fail(f"the command hung (over {BOUND} s); it printed:\n{self.stderr}")


def batch(store: Store, tmp_path: Path, out: str, *more: str) -> Command:
    """A batch of the inputs into ``out`` (its state under ``tmp_path``)."""
    state = tmp_path / f"state-{out.replace('/', '-')}"
    source, target = store.url("in") + "/", store.url(out) + "/"
    return Command(
        store, tmp_path, "batch", source, target, "--state-dir", str(state), *WORKERS, *more
    )


def assert_published(store: Store, out: str, skipped: int | None = None) -> None:
    """Every input's archive at its key, readable, holding its run; the report counting them
    (``skipped``: how many a resume left out, when known)."""
    prefix = f"{store.source}/{out}"
    archives = {f"{prefix}/{relative}.mzpeak" for relative in store.expected}
    reports = {
        f"{prefix}/{name}" for name in ("batch_report.json", "batch_report.html", "catalog.parquet")
    }
    assert store.keys(prefix) == archives | reports
    summary = store.report(prefix)["summary"]
    assert summary["converted"] + summary["skipped"] == len(store.expected), summary
    assert summary["failed"] == 0, summary
    if skipped is not None:
        assert summary["skipped"] == skipped, summary
    for relative, (spectra, chromatograms) in store.expected.items():
        url = store.url(out, f"{relative}.mzpeak")
        with open_archive(url, store.options) as archive:
            assert (len(archive), archive.chromatogram_count) == (spectra, chromatograms), url
            assert archive.read_spectrum(spectra - 1) is not None


def test_fresh_batches(store, tmp_path) -> None:
    for k in range(store.rounds["fresh"]):
        command = batch(store, tmp_path, f"fresh{k}")
        command.succeeded()
        assert_published(store, f"fresh{k}")


def test_batches_resumed_after_being_killed(store, tmp_path) -> None:
    for k in range(store.rounds["resumed"]):
        out = f"resumed{k}"
        first = batch(store, tmp_path, out)
        assert first.wait_for("done "), first.stderr  # killed while the others convert
        first.kill()
        again = batch(store, tmp_path, out, "--resume")
        again.succeeded()
        assert_published(store, out)


def test_two_batches_at_once(store, tmp_path) -> None:
    for k in range(store.rounds["together"]):
        both = [batch(store, tmp_path, f"together{k}-{side}") for side in "ab"]
        for command in both:
            command.succeeded()
        for side in "ab":
            assert_published(store, f"together{k}-{side}")


def test_a_worker_killed_under_a_batch_and_a_conversion(store, tmp_path) -> None:
    command = batch(store, tmp_path, "worker-killed", "--partition-items", "2")
    assert command.kill_a_worker(), command.stderr
    command.succeeded()
    assert_published(store, "worker-killed")

    source, target = store.url("run", "big.mzML"), store.url("run", "big.mzpeak")
    conversion = Command(
        store, tmp_path, "convert", source, target, *WORKERS, "--partition-items", "5"
    )
    assert conversion.kill_a_worker(), conversion.stderr
    conversion.succeeded()
    with open_archive(target, store.options) as archive:
        assert (len(archive), archive.chromatogram_count) == store.expected_run
