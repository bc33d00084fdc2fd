"""An interrupt at any point of a conversion leaves no staging folder and no output."""

from __future__ import annotations

from pathlib import Path

import pytest

from mzpeak_dask import ClusterOptions, ConvertOptions
from mzpeak_dask.parallel.executors import InlineExecutor
from mzpeak_dask.parallel.scheduler import Coordinator

from ..conftest import BUNDLED


class InterruptedProbe(InlineExecutor):
    """Ctrl-C arrives while the coordinator checks whether workers see the staging folder."""

    def handoff_folder(self, staging: Path) -> str | None:
        raise KeyboardInterrupt


def test_interrupt_while_a_job_starts_leaves_nothing(tmp_path) -> None:
    options = ConvertOptions()
    coordinator = Coordinator(
        InterruptedProbe(), options, ClusterOptions(cluster="inline"), None, True, None
    )
    with pytest.raises(KeyboardInterrupt):
        coordinator.run([(BUNDLED / "small.mzML", tmp_path / "small.mzpeak")])
    assert list(tmp_path.iterdir()) == []
