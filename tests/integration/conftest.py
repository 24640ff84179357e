"""Fixtures of the integration tests (ansible-playbook on localhost, inventory/local)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # playbook_run, whatever pytest's import mode

from playbook_run import checkout_copy  # noqa: E402


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    path = tmp_path / "results"
    path.mkdir()
    return path


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """A private copy of the checkout (no venv, results or git) to break on purpose."""
    return checkout_copy(tmp_path / "checkout")
