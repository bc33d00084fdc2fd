"""Where a conversion's time goes, for ``bench_remote``: the coordinator's wall time in each
step of an in-process conversion (timed by wrapping the functions that do them for the
duration of the block), the parts of an S3 upload sent beside it, this process' CPU time and
the S3 server's (a process of its own), and the S3 requests this process made, by operation
(counted at the client, HEADs too), with those the plan made."""

from __future__ import annotations

import functools
import os
import threading
import time
from collections import defaultdict
from contextlib import contextmanager

from mzpeak_dask.archive import digest
from mzpeak_dask.parallel import tasks
from mzpeak_dask.storage import streaming
from mzpeak_dask.transfer import staged

from ..helpers.servers import cpu_seconds

# label -> the (owner, name) of each function whose time counts for it
STEPS = {
    "plan (survey, sample)": [(tasks, "plan_run")],
    "parse+encode": [(tasks, "encode_partition")],
    "write parts, assemble, finish": [(tasks, "write_partition"), (tasks, "finish")],
    "  of which waiting for the digest": [(digest.InputDigest, "result")],
    "upload left at the end": [
        (streaming.GrowingUpload, "complete"),
        (staged, "upload_file"),
    ],
}
BESIDE = {"parts sent during the conversion": (streaming.GrowingUpload, "_send")}


class Breakdown:
    """Seconds per step of the conversions run inside :meth:`timing`."""

    def __init__(self, server_pid: int | None = None):
        self.server_pid = server_pid
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.main = threading.main_thread()
        self.requests: dict[str, int] = defaultdict(int)  # "operation" and "operation, step"
        self.step = ""  # the step of STEPS the main thread is in

    @contextmanager
    def timing(self):
        saved = []
        for label, targets in [*STEPS.items(), *((k, [v]) for k, v in BESIDE.items())]:
            for owner, name in targets:
                original = getattr(owner, name)
                saved.append((owner, name, original))
                setattr(owner, name, self._timed(label, original, label in BESIDE))
        saved.append(self._counting_s3_requests())
        cpu, server = os.times(), self._server()
        start = time.perf_counter()
        try:
            yield self
        finally:
            self.seconds["total"] += time.perf_counter() - start
            after = os.times()
            self.seconds["this process' CPU"] += (after.user + after.system) - (
                cpu.user + cpu.system
            )
            if server is not None:
                self.seconds["S3 server's CPU (own process)"] += self._server() - server
            for owner, name, original in saved:
                setattr(owner, name, original)

    def _counting_s3_requests(self) -> tuple:
        from aiobotocore.client import AioBaseClient

        original = AioBaseClient._make_api_call
        breakdown = self

        async def counted(client, operation, params):  # noqa: ANN001, ANN202
            breakdown.requests[operation] += 1
            if breakdown.step:
                breakdown.requests[f"{operation}, {breakdown.step}"] += 1
            return await original(client, operation, params)

        AioBaseClient._make_api_call = counted
        return AioBaseClient, "_make_api_call", original

    def request_line(self) -> str:
        """The S3 requests, by operation; of them, those the plan made."""
        ops = sorted(k for k in self.requests if ", " not in k)
        plan = next(iter(STEPS))
        return ", ".join(
            f"{op} {self.requests[op]}"
            + (
                f" ({self.requests[f'{op}, {plan}']} in the plan)"
                if f"{op}, {plan}" in self.requests
                else ""
            )
            for op in ops
        )

    def _server(self) -> float | None:
        return None if self.server_pid is None else cpu_seconds(self.server_pid)

    def _timed(self, label: str, fn, beside: bool):  # noqa: ANN001, ANN202
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            if not beside and threading.current_thread() is not self.main:
                return fn(*args, **kwargs)
            start = time.perf_counter()
            outer = self.step
            if not beside:
                self.step = outer or label
            try:
                return fn(*args, **kwargs)
            finally:
                self.step = outer
                self.seconds[label] += time.perf_counter() - start
                self.calls[label] += 1

        return timed

    def lines(self, other: Breakdown, names: tuple[str, str]) -> list[str]:
        """This breakdown beside ``other``'s, one step a line."""
        labels = [*STEPS, *BESIDE, "this process' CPU", "S3 server's CPU (own process)", "total"]
        out = [f"  {'':42} {names[0]:>9} {names[1]:>9}"]
        for label in labels:
            if label in self.seconds or label in other.seconds:
                a, b = self.seconds.get(label, 0.0), other.seconds.get(label, 0.0)
                out.append(f"  {label:42} {a:>8.2f}s {b:>8.2f}s")
        return out


__all__ = ["Breakdown"]
