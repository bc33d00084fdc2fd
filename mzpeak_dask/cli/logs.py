"""What the command line logs: Dask and tornado kept quiet unless asked (--verbose)."""

from __future__ import annotations

import logging
import os


def quiet_dask_logs() -> None:
    """Dask logs its lifecycle at INFO and every failed task at ERROR (the coordinator reports
    each failure itself, in one line); tornado logs a traceback when a Ctrl-C lands inside one of
    distributed's event-loop calls. Both are configured when distributed is imported (from Dask's
    config, passed on to the workers) or set here when it already is."""
    import dask

    levels = {"distributed": "critical", "tornado.application": "critical"}
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "critical")
    dask.config.set({"logging": {**dask.config.get("logging", {}), **levels}})
    for name in levels:
        logging.getLogger(name).setLevel(logging.CRITICAL)
