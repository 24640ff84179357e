"""Fixtures of the integration tests (ansible-playbook on localhost, inventory/local)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # playbook_run, whatever pytest's import mode

from playbook_run import REPO  # noqa: E402

COPY_IGNORE = shutil.ignore_patterns(".venv", ".git", "results", ".ansible", ".pytest_cache", "__pycache__")


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    path = tmp_path / "results"
    path.mkdir()
    return path


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """A private copy of the checkout (no venv, results or git) to break on purpose."""
    copy = tmp_path / "checkout"
    shutil.copytree(REPO, copy, ignore=COPY_IGNORE, symlinks=True)
    return copy
