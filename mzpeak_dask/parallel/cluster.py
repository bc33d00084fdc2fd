"""One way to a Dask cluster: :func:`cluster_client` gives the client every command runs on —
the one the caller passes, none (inline: this process), a running scheduler, or a cluster of
one of the :data:`KINDS` (option groups of :mod:`mzpeak_dask.options`) started here and shut
down on exit. The same pipeline runs on each; only the cluster object changes.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging
from collections.abc import Iterator
from typing import Any

from ..errors import ClusterError
from ..options import ClusterOptions
from ..support.hosts import check_resolves
from .where import resolve
from .worker_env import shell_exports, worker_settings

log = logging.getLogger(__name__)
START_METHOD = "distributed.worker.multiprocessing-method"  # Dask's setting for local workers


@functools.cache
def _warn_spawned() -> None:
    log.warning("workers are never forked from the coordinator: spawn is used")


@contextlib.contextmanager
def spawned_workers() -> Iterator[None]:
    """Local workers Dask starts within the block (a nanny's first, or one started again) are
    spawned, never forked, whatever Dask's configuration names (warned once per process)."""
    import dask

    if dask.config.get(START_METHOD, None) != "spawn":
        _warn_spawned()
    with dask.config.set({START_METHOD: "spawn"}):
        yield


class LocalKind:
    """An embedded LocalCluster of spawned worker processes. A worker dying as it starts fails
    the whole start: started again, up to ``attempts`` times; a worker not started within
    ``start_timeout`` seconds stops it at once (:class:`ClusterError`)."""

    name = "local"
    description = "embedded LocalCluster"
    attempts = 3

    def start(self, options: ClusterOptions) -> Any:
        for attempt in range(1, self.attempts + 1):
            try:
                return self._start(options)
            except Exception as exc:  # noqa: BLE001 - e.g. RuntimeError: Nanny failed to start
                if _timed_out(exc):
                    raise ClusterError(
                        "cannot start the local Dask cluster: a worker did not start in "
                        f"{options.start_timeout:g} s (start_timeout)"
                    ) from None
                if attempt == self.attempts:
                    raise ClusterError(
                        f"cannot start the local Dask cluster ({attempt} attempts; last: {exc})"
                    ) from None
                log.warning("the local Dask cluster failed to start (%s); starting it again", exc)
        raise AssertionError("unreachable")

    @staticmethod
    def _start(options: ClusterOptions) -> Any:
        from distributed import LocalCluster

        with worker_settings(), spawned_workers():
            return LocalCluster(
                n_workers=options.worker_count(),
                threads_per_worker=options.threads_per_worker,
                processes=True,
                memory_limit=options.memory_limit,
                # a free port either way (the scheduler's HTTP endpoints use it even without
                # the dashboard); the dashboard itself only on request
                dashboard_address=":0",
                scheduler_kwargs={"dashboard": options.dashboard},
                death_timeout=options.start_timeout,  # a worker that does not start in time
            )


def _timed_out(exc: BaseException | None) -> bool:
    """Whether ``exc`` came of a deadline (distributed wraps the TimeoutError)."""
    while exc is not None:
        if isinstance(exc, TimeoutError):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class SlurmKind:
    """A ``dask_jobqueue.SLURMCluster`` of ``workers`` jobs, set up by the ``[slurm]``
    options (:class:`~mzpeak_dask.options.SlurmOptions`)."""

    name = "slurm"
    description = "SLURM jobs through dask-jobqueue"
    install = "pip install 'mzpeak-dask[jobqueue]'"

    def start(self, options: ClusterOptions) -> Any:
        cluster = self.build(options)
        cluster.scale(jobs=options.workers or 1)
        return cluster

    def build(self, options: ClusterOptions) -> Any:
        """The SLURMCluster, not yet scaled (no job submitted)."""
        try:
            from dask_jobqueue import SLURMCluster
        except ImportError:
            raise ClusterError(f"--cluster slurm needs dask-jobqueue ({self.install})") from None
        settings = options.slurm.keywords()
        settings["job_script_prologue"] = [*options.slurm.job_script_prologue, *shell_exports()]
        scheduler = settings["scheduler_options"] = dict(options.slurm.scheduler_options)
        scheduler.setdefault("dashboard_address", ":0")
        scheduler.setdefault("dashboard", options.dashboard)
        try:
            return SLURMCluster(**settings)
        except TypeError as exc:
            raise ClusterError(f"invalid [slurm] option: {exc}") from None


# the kinds of cluster started here: a name, a description, start(options) -> a scaled cluster
KINDS: dict[str, LocalKind | SlurmKind] = {k.name: k for k in (LocalKind(), SlurmKind())}


# A cluster started here runs its scheduler and its workers' nannies in this process. Dask
# checks its event loop every 20 ms, samples the system every 500 ms and each worker's memory
# every 100 ms: most of what the coordinator spent (tests/benchmarks/bench_scale.py: a batch's
# share 7 % without the first two, 3 % with; the 100 MB run's about 15 % lower with the third,
# which stops a worker past its memory limit within a second). The user's settings win.
QUIET = {"distributed.admin.tick.interval": "1s", "distributed.admin.system-monitor.interval": "5s"}
QUIET["distributed.worker.memory.monitor-interval"] = "1s"


def unless_set(settings: dict[str, str]) -> dict[str, str]:
    """Those of ``settings`` that Dask's configuration leaves at Dask's own default."""
    import dask
    import distributed  # noqa: F401 - adds distributed's defaults to dask.config.defaults

    builtin = dask.config.merge(*dask.config.defaults)
    return {
        key: value
        for key, value in settings.items()
        if dask.config.get(key, None) == dask.config.get(key, None, config=builtin)
    }


def serves_dashboard(options: ClusterOptions) -> bool:
    """Whether a cluster started here serves Dask's dashboard: when asked to (``dashboard``)
    and bokeh, which draws it, is installed; asked without bokeh, a warning says so."""
    if not options.dashboard:
        return False
    if importlib.util.find_spec("bokeh") is None:
        log.warning("the Dask dashboard needs bokeh (pip install bokeh): none is served")
        return False
    return True


def job_script(options: ClusterOptions) -> str:
    """The batch script SLURMCluster would submit (works without SLURM installed)."""
    cluster = SlurmKind().build(options)
    try:
        return cluster.job_script()
    finally:
        cluster.close()


@contextlib.contextmanager
def cluster_client(options: ClusterOptions, client: Any = None) -> Iterator[Any]:
    """The ``distributed.Client`` the work runs on (None: inline, no Dask): ``client`` when
    given, else what ``options`` ask for; a cluster started here is shut down on exit."""
    options = resolve(options, 0)  # "auto" left to here (no size known): this process
    if client is not None or options.cluster == "inline":
        yield client
        return
    import dask
    from distributed import Client

    # a local worker started again while the cluster runs is spawned too
    local = contextlib.nullcontext() if options.scheduler else spawned_workers()
    with local:
        cluster = None
        try:
            if options.scheduler:
                check_resolves(options.scheduler)  # else Client retries until start_timeout
                client = Client(options.scheduler, timeout=options.start_timeout)
            else:
                options = options.updated(dashboard=serves_dashboard(options))
                with dask.config.set(unless_set(QUIET)):
                    cluster = KINDS[options.cluster].start(options)
                client = Client(cluster, timeout=options.start_timeout)
        except (OSError, TimeoutError) as exc:
            _close(None, cluster)  # None when it did not start
            where = options.scheduler or options.cluster
            raise ClusterError(f"cannot start or reach the Dask cluster {where} ({exc})") from None
        try:
            yield client
        finally:
            _close(client, cluster)


CLOSE_SECONDS = 30  # to shut down what was started here


def _close(client: Any, cluster: Any) -> None:
    """Shut down what :func:`cluster_client` started; a failure to close is logged, never
    raised (it must not replace what stopped the work, nor fail work that is done)."""
    for closable in [c for c in (client, cluster) if c is not None]:
        try:
            closable.close(timeout=CLOSE_SECONDS)
        except Exception as exc:  # noqa: BLE001 - see above
            log.warning("closing the Dask %s failed: %s", type(closable).__name__, exc)


__all__ = ["KINDS", "cluster_client", "job_script", "serves_dashboard"]
