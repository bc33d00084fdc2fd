from __future__ import annotations

import pytest

from .builds import Built, built


@pytest.fixture(scope="session")
def exported(tmp_path_factory) -> Built:
    return built(tmp_path_factory)
