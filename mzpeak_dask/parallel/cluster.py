"""Starting or reaching a Dask cluster: an embedded LocalCluster, a running scheduler, or SLURM
through dask-jobqueue — the same pipeline runs on each; only the cluster object changes."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from ..errors import ClusterError
from ..options import ClusterOptions
from .worker_env import shell_exports, worker_settings

log = logging.getLogger(__name__)
START_ATTEMPTS = 3


def slurm_cluster(options: ClusterOptions) -> Any:
    """A ``dask_jobqueue.SLURMCluster`` built from the ``[slurm]`` options (not yet scaled)."""
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise ClusterError(
            "--cluster slurm needs dask-jobqueue (pip install 'mzpeak-dask[jobqueue]')"
        ) from None
    settings = options.slurm.keywords()
    settings["job_script_prologue"] = [*options.slurm.job_script_prologue, *shell_exports()]
    scheduler = settings["scheduler_options"] = dict(options.slurm.scheduler_options)
    scheduler.setdefault("dashboard_address", ":0")
    scheduler.setdefault("dashboard", options.dashboard)
    try:
        return SLURMCluster(**settings)
    except TypeError as exc:
        raise ClusterError(f"invalid [slurm] option: {exc}") from None


def job_script(options: ClusterOptions) -> str:
    """The batch script SLURMCluster would submit (works without SLURM installed)."""
    cluster = slurm_cluster(options)
    try:
        return cluster.job_script()
    finally:
        cluster.close()


def local_cluster(options: ClusterOptions, attempts: int = START_ATTEMPTS) -> Any:
    """An embedded LocalCluster. One worker that dies while the cluster starts (killed, out
    of memory) makes distributed fail the whole start: it is then started again."""
    for _ in range(attempts - 1):
        try:
            return _start_local(options)
        except Exception as exc:  # noqa: BLE001 - e.g. RuntimeError: Nanny failed to start
            log.warning("the local Dask cluster failed to start (%s); starting it again", exc)
    try:
        return _start_local(options)
    except Exception as exc:  # noqa: BLE001
        raise ClusterError(
            f"cannot start the local Dask cluster ({attempts} attempts; last: {exc})"
        ) from None


def _start_local(options: ClusterOptions) -> Any:
    from distributed import LocalCluster

    with worker_settings():
        return LocalCluster(
            n_workers=options.worker_count(),
            threads_per_worker=options.threads_per_worker,
            processes=True,
            memory_limit=options.memory_limit,
            # a free port either way (the scheduler's HTTP endpoints use it even without the
            # dashboard); the dashboard itself only on request
            dashboard_address=":0",
            scheduler_kwargs={"dashboard": options.dashboard},
        )


@contextlib.contextmanager
def start_client(options: ClusterOptions) -> Iterator[Any]:
    from distributed import Client

    cluster = None
    try:
        if options.scheduler:
            client = Client(options.scheduler, timeout="30s")
        else:
            if options.cluster == "slurm":
                cluster = slurm_cluster(options)
                cluster.scale(jobs=options.workers or 1)
            else:
                cluster = local_cluster(options)
            client = Client(cluster)
    except (OSError, TimeoutError) as exc:
        if cluster is not None:
            cluster.close()
        where = options.scheduler or options.cluster
        raise ClusterError(f"cannot start or reach the Dask cluster {where} ({exc})") from None
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
