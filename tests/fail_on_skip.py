"""Pytest hooks: with KVLINT_TEST_FAIL_ON_SKIP=1 a skip is a failure (except `gpu`-marked tests).

CI's smoke-cpu job installs torch and sets the variable, so the CPU smoke tests cannot go green
by skipping (a `pytest.importorskip("torch")` that skips because torch did not install or import
fails the job instead). Without the variable nothing changes. tests/conftest.py imports the hooks;
tests/test_fail_on_skip.py runs them through a real pytest.
"""

from __future__ import annotations

import os
from typing import Any, Optional

import pytest

ENV = "KVLINT_TEST_FAIL_ON_SKIP"
EXEMPT_MARKERS = ("gpu",)  # may skip anywhere: no CUDA device on the runner


def fail_on_skip_enabled() -> bool:
    return os.environ.get(ENV, "").strip().lower() not in ("", "0", "false", "no")


def _reason(longrepr: Any) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # (path, line, "Skipped: reason")
        path, line, message = longrepr
        return f"{message} ({path}:{line})"
    return str(longrepr)


def _to_failure(report: Any, what: str) -> None:
    report.outcome = "failed"
    report.longrepr = f"{what} skipped, but {ENV} is set, so a skip is a failure: {_reason(report.longrepr)}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any):
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and fail_on_skip_enabled()):
        return
    if hasattr(report, "wasxfail"):  # an expected failure, reported as a skip
        return
    if any(item.get_closest_marker(name) is not None for name in EXEMPT_MARKERS):
        return
    _to_failure(report, item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """A module-level `pytest.importorskip` skips the whole module while collecting it."""
    outcome = yield
    report: Optional[Any] = outcome.get_result()
    if report is not None and report.skipped and fail_on_skip_enabled():
        _to_failure(report, collector.nodeid or str(collector.path))
