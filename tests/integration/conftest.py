"""Fixtures of the integration tests (ansible-playbook on localhost, inventory/local)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # playbook_run, whatever pytest's import mode

from playbook_run import REPO  # noqa: E402


def copy_ignore(directory: str, names: list[str]) -> set[str]:
    """The checkout's own venv, git, results and caches (results/ at the top only: not case_runners/results)."""
    top = {".venv", ".git", "results", ".ansible", ".pytest_cache", ".perfplay-images"} if Path(directory) == REPO else set()
    return {name for name in names if name in top or name == "__pycache__"}


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    path = tmp_path / "results"
    path.mkdir()
    return path


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """A private copy of the checkout (no venv, results or git) to break on purpose."""
    copy = tmp_path / "checkout"
    shutil.copytree(REPO, copy, ignore=copy_ignore, symlinks=True)
    return copy
