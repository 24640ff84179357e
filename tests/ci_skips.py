"""In CI (CI=true) a skipped test is a failed one: whatever a test needs (root, Chromium, a tool), CI has it, so a
skip there means a test that did not run and a suite that passed falsely. tests/conftest.py registers these hooks;
an expected failure (xfail) is not a skip."""

from __future__ import annotations

import os

import pytest

SAYS = "skipped in CI (CI=true), which must run every test: "


def _fail_a_skip(report: pytest.CollectReport | pytest.TestReport) -> None:
    if os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail"):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)  # (file, line, reason) from pytest
        report.outcome = "failed"
        report.longrepr = SAYS + reason


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport:
    report = yield
    _fail_a_skip(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> pytest.CollectReport:
    report = yield
    _fail_a_skip(report)
    return report
