"""Fixtures every suite shares (tests/process_helpers.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # process_helpers, whatever pytest's import mode

from process_helpers import Sleepers  # noqa: E402


@pytest.fixture
def sleepers() -> Iterator[Sleepers]:
    """sleepers(*argv, code=, run_id=, session=, env=) starts a plain process; all are killed at the end."""
    started = Sleepers()
    yield started
    started.kill_all()
