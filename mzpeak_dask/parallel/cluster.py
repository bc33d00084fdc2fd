"""One way to a Dask cluster: :func:`cluster_client` gives the client every command runs on —
the one the caller passes, none (``cluster = "inline"``: this process, no Dask), a running
scheduler (``scheduler = ADDRESS``), or a cluster of one of the registered kinds started here
and shut down on exit. The same pipeline runs on each; only the cluster object changes.

A kind of cluster is a few class attributes and a ``start`` (as dask-jobqueue's cluster classes
are): :data:`KINDS` maps the ``cluster`` option's values to them, and their settings are option
groups of :mod:`mzpeak_dask.options` with commented defaults in ``configs/default.toml``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
from collections.abc import Iterator
from typing import Any, ClassVar

from ..errors import ClusterError
from ..options import ClusterOptions
from .worker_env import shell_exports, worker_settings

log = logging.getLogger(__name__)


class ClusterKind:
    """A kind of cluster this package can start."""

    name: ClassVar[str]
    description: ClassVar[str]

    def start(self, options: ClusterOptions) -> Any:
        """A cluster, started and scaled (``close()`` shuts it down)."""
        raise NotImplementedError


class LocalKind(ClusterKind):
    """An embedded LocalCluster of worker processes on this machine. One worker that dies
    while the cluster starts (killed, out of memory) makes distributed fail the whole start:
    it is then started again, up to ``attempts`` times.

    Its workers are spawned (Dask's default start method): each is a new interpreter, never a
    fork of this process, whose threads (the event loop's, a storage client's, a batch
    lease's) a forked child would inherit with their locks held and their connections shared.
    A start method the user sets in Dask's configuration is theirs."""

    name = "local"
    description = "embedded LocalCluster"
    attempts = 3

    def start(self, options: ClusterOptions) -> Any:
        for _ in range(self.attempts - 1):
            try:
                return self._start(options)
            except Exception as exc:  # noqa: BLE001 - e.g. RuntimeError: Nanny failed to start
                log.warning("the local Dask cluster failed to start (%s); starting it again", exc)
        try:
            return self._start(options)
        except Exception as exc:  # noqa: BLE001
            raise ClusterError(
                f"cannot start the local Dask cluster ({self.attempts} attempts; last: {exc})"
            ) from None

    @staticmethod
    def _start(options: ClusterOptions) -> Any:
        import dask
        from distributed import LocalCluster

        # the workers keep the memory monitor the configuration gives (their spilling and
        # pausing), their nannies in this process take NANNY_CONFIG's
        workers = nested({key: dask.config.get(key) for key in NANNY_CONFIG})
        with worker_settings(), dask.config.set(unless_set(NANNY_CONFIG)):
            # a nanny replaces each top-level section of the configuration by the one given
            workers = dask.config.merge({"distributed": dask.config.get("distributed")}, workers)
            return LocalCluster(
                n_workers=options.worker_count(),
                threads_per_worker=options.threads_per_worker,
                processes=True,
                memory_limit=options.memory_limit,
                # a free port either way (the scheduler's HTTP endpoints use it even without
                # the dashboard); the dashboard itself only on request
                dashboard_address=":0",
                scheduler_kwargs={"dashboard": options.dashboard},
                config=workers,
            )


class SlurmKind(ClusterKind):
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


KINDS: dict[str, ClusterKind] = {kind.name: kind for kind in (LocalKind(), SlurmKind())}
SCHEDULER_TIMEOUT = "30s"  # to reach a running scheduler
# A cluster started here runs its scheduler in this process, the coordinator's. Dask checks a
# server's event loop every 20 ms by default: about 25 ms of CPU a second, busy or idle, as
# much as the scheduling of a batch of small runs itself. Once a second still tells a loop
# blocked for longer than ``distributed.admin.tick.limit`` (3 s). Without a dashboard, nothing
# reads the system monitor's samples (CPU, memory, I/O) more often than heartbeats do: every
# 5 s rather than 500 ms saves it another 5 ms a second.
STARTED_CONFIG = {"distributed.admin.tick.interval": "1s"}
NO_DASHBOARD_CONFIG = {"distributed.admin.system-monitor.interval": "5s"}
# A LocalCluster's nannies live in this process too: each reads its worker's memory every
# 100 ms by default (to restart a worker past ``distributed.worker.memory.terminate``, 95 % of
# its limit), 0.2 ms each, about 2.5 ms of CPU a second per worker: with the ticks above, most
# of what an idle coordinator of 2 workers spent (13 ms a second, 6 ms now). A worker's own
# monitor, which spills and pauses it (at 70 % and 80 %), keeps its interval.
NANNY_CONFIG = {"distributed.worker.memory.monitor-interval": "1s"}


def serves_dashboard(options: ClusterOptions) -> bool:
    """Whether a cluster started here serves Dask's dashboard: when asked to (``dashboard``)
    and bokeh, which draws it, is installed; asked without bokeh, a warning says so."""
    if not options.dashboard:
        return False
    if importlib.util.find_spec("bokeh") is None:
        log.warning("the Dask dashboard needs bokeh (pip install bokeh): none is served")
        return False
    return True


def direct_to_workers(options: ClusterOptions) -> bool | None:
    """True for a LocalCluster started here, unless Dask's configuration says otherwise
    (``distributed.client.direct-to-workers``): the client takes each result from the worker
    holding it, on this machine, instead of through the scheduler (in this process too),
    which spared about 6 % of the coordinator's CPU in a 102 MB run of 16 tasks."""
    import dask

    configured = dask.config.get("distributed.client.direct-to-workers", None)
    return configured if configured is not None or options.cluster != "local" else True


def unless_set(settings: dict[str, str]) -> dict[str, str]:
    """Those of ``settings`` whose key Dask's configuration leaves at Dask's own default: a
    value the user set (a config file, a ``DASK_...`` variable, ``dask.config.set``) wins."""
    import dask
    import distributed  # noqa: F401 - adds distributed's defaults to dask.config.defaults

    builtin = dask.config.merge(*dask.config.defaults)
    return {
        key: value
        for key, value in settings.items()
        if dask.config.get(key, None) == dask.config.get(key, None, config=builtin)
    }


def nested(settings: dict[str, Any]) -> dict[str, Any]:
    """Dotted keys as the nested dictionary Dask's configuration is."""
    out: dict[str, Any] = {}
    for key, value in settings.items():
        *path, last = key.split(".")
        level = out
        for part in path:
            level = level.setdefault(part, {})
        level[last] = value
    return out


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
    if client is not None:
        yield client
        return
    if options.cluster == "inline":
        yield None
        return
    from distributed import Client

    cluster = None
    try:
        if options.scheduler:
            client = Client(options.scheduler, timeout=SCHEDULER_TIMEOUT)
        else:
            import dask

            options = options.updated(dashboard=serves_dashboard(options))
            quiet = {} if options.dashboard else NO_DASHBOARD_CONFIG
            with dask.config.set(unless_set({**STARTED_CONFIG, **quiet})):
                cluster = KINDS[options.cluster].start(options)
            client = Client(cluster, direct_to_workers=direct_to_workers(options))
    except (OSError, TimeoutError) as exc:
        if cluster is not None:
            cluster.close()
        where = options.scheduler or options.cluster
        raise ClusterError(f"cannot start or reach the Dask cluster {where} ({exc})") from None
    try:
        yield client
    finally:
        _close(client, cluster)


def _close(client: Any, cluster: Any) -> None:
    """Shut down what :func:`cluster_client` started. A failure to close (a worker that does
    not stop in time on a loaded machine) is logged, never raised: it must not replace what
    stopped the work (an interrupt the caller records) nor fail work that is done."""
    for closable in (client, cluster):
        if closable is None:
            continue
        try:
            closable.close()
        except Exception as exc:  # noqa: BLE001 - see above
            log.warning("closing the Dask %s failed: %s", type(closable).__name__, exc)


__all__ = ["KINDS", "ClusterKind", "cluster_client", "job_script", "serves_dashboard"]
