"""Fixtures of the integration tests (ansible-playbook on localhost, inventory/local)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # playbook_run, whatever pytest's import mode

from playbook_run import checkout_copy  # noqa: E402

# make test runs this suite in two workers, a file at a time, in collection order: the longest files first, so that
# the last file to start is a short one and the workers end together (the llama playbook alone is about 4 minutes).
LONGEST_FIRST = ("test_llama_playbook.py", "test_cleanup.py", "test_new_chip.py", "test_bench_quick.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: a file's tests keep their order


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    path = tmp_path / "results"
    path.mkdir()
    return path


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """A private copy of the checkout (no venv, results or git) to break on purpose."""
    return checkout_copy(tmp_path / "checkout")
