"""Every test that starts a Dask cluster or a server says so with its mark (``cluster``,
``server``), so that ``make test-fast`` (``-m "not slow and not cluster and not server"``)
leaves them all out. The helpers that start one call :func:`require`, which fails an unmarked
test at once; the test suite's conftest sets the running test's marks before its fixtures."""

from __future__ import annotations

current: frozenset[str] = frozenset()
enforcing = False  # the test suite's conftest turns it on; benchmarks start what they need


class UnmarkedTest(Exception):
    """A test started a cluster or a server without the mark that says so."""


def require(mark: str, what: str) -> None:
    """Fail the running test unless it carries ``mark`` (it is about to start ``what``)."""
    if enforcing and mark not in current:
        raise UnmarkedTest(f"this test starts {what}: mark it @pytest.mark.{mark}")
