"""Fixtures every suite shares (tests/process_helpers.py), and in CI a skip is a failure (tests/ci_skips.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # process_helpers, whatever pytest's import mode

from ci_skips import pytest_make_collect_report, pytest_runtest_makereport  # noqa: E402, F401 - hooks
from process_helpers import Sleepers  # noqa: E402


@pytest.fixture
def sleepers() -> Iterator[Sleepers]:
    """sleepers(*argv, code=, run_id=, session=, env=) starts a plain process; all are killed at the end."""
    started = Sleepers()
    yield started
    started.kill_all()

