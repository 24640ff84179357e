"""Fixtures of the report tests: Debian's chromium (installed here in CI), and where screenshots are kept."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # browser, whatever pytest's import mode

from browser import CHROMIUM, INSTALL, find_chromium, install_chromium  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "report"  # gitignored: the screenshots a run of the tests leaves


@pytest.fixture(scope="session")
def chromium() -> str:
    """The chromium executable: installed with apt-get in CI (which fails without it), else skipped with the
    command that installs it."""
    found = find_chromium()
    if found:
        return found
    if os.environ.get("CI") == "true":
        return install_chromium()
    pytest.skip(f"no {CHROMIUM} on PATH: install it with `{' '.join(INSTALL)}` (as root)")


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
