"""make test runs the unit and report tests, and the module and integration tests, in two pytest-xdist workers each,
a file per worker at a time (--dist loadfile): the longest files first, so that the last file to start is a short
one and both workers end together. tests/conftest.py registers these hooks."""

from __future__ import annotations

import pytest

# The files of a minute or more under make test on the 2-core CI machine, longest first; the others follow in
# collection order. pytest-xdist starts a worker on two files when its first has 2 tests or fewer: the llama
# playbook's has 3, so that no other long file waits behind it.
LONGEST_FIRST = (
    # tests/modules and tests/integration (the llama playbook alone is about 5 minutes)
    "test_llama_playbook.py", "test_bench_quick.py", "test_inference_playbook.py", "test_new_chip.py",
    "test_cleanup.py",
    # tests/unit and tests/report
    "test_inference.py", "test_compare_runs.py", "test_stacks.py", "test_inference_run.py", "test_trainer_fsdp.py",
    "test_cases.py", "test_report_page.py", "test_worker_stop.py",
)


def pytest_configure(config: pytest.Config) -> None:
    """pytest-xdist queues a --dist loadfile run's files by their number of tests, most first, unless told not to:
    in collection order instead, so that LONGEST_FIRST holds (the llama playbook's file, of 2 tests, went nearly
    last)."""
    config.option.loadscopereorder = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: a file's tests keep their order
