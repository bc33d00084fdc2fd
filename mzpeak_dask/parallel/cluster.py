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


def slurm_cluster(options: ClusterOptions) -> Any:
    """A ``dask_jobqueue.SLURMCluster`` built from the ``[slurm]`` options (not yet scaled)."""
    try:
        from dask_jobqueue import SLURMCluster
    except ImportError:
        raise ClusterError(
            "--cluster slurm needs dask-jobqueue (pip install 'mzpeak-dask[jobqueue]')"
        ) from None
    settings = dict(options.slurm)
    settings["job_script_prologue"] = [*settings.get("job_script_prologue", []), *shell_exports()]
    settings.setdefault("cores", 1)
    settings.setdefault("memory", "4GB")
    settings.setdefault("processes", settings["cores"])
    scheduler = settings.setdefault("scheduler_options", {})
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


@contextlib.contextmanager
def start_client(options: ClusterOptions) -> Iterator[Any]:
    from distributed import Client, LocalCluster

    cluster = None
    try:
        if options.scheduler:
            client = Client(options.scheduler, timeout="30s")
        else:
            if options.cluster == "slurm":
                cluster = slurm_cluster(options)
                cluster.scale(jobs=options.workers or 1)
            else:
                with worker_settings():
                    cluster = LocalCluster(
                        n_workers=options.worker_count(),
                        threads_per_worker=options.threads_per_worker,
                        processes=True,
                        memory_limit=options.memory_limit,
                        # a free port either way (the scheduler's HTTP endpoints use it
                        # even without the dashboard); the dashboard itself only on request
                        dashboard_address=":0",
                        scheduler_kwargs={"dashboard": options.dashboard},
                    )
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
