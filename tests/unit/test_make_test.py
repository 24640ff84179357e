"""`make test` as CI's output shows it (.ci/run runs it): every pytest process lists its slowest tests and prints its
own wall time, and a failing one still fails the target. A stand-in Python records each call, so no suite runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

from case_runners.core.paths import project_root

REPO = project_root()
SUITES = ["tests/unit tests/report", "tests/modules tests/integration", "tests/cluster", "tests/docker"]


def make_test(tmp_path: Path, failing: str = "") -> subprocess.CompletedProcess[str]:
    """`make test` with lint and the venv taken as done (-o) and PY a script that echoes its arguments."""
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\necho "ran: $*"\ncase "$*" in *"{failing or "no such suite"}"*) exit 3;; esac\n')
    python.chmod(0o755)
    return subprocess.run(["make", "--no-print-directory", "-o", "lint", "-o", ".venv/.installed-dev", "test",
                           f"PY={python}"], cwd=REPO, capture_output=True, text=True, timeout=60)


def test_each_pytest_process_prints_its_slowest_tests_and_its_time(tmp_path: Path) -> None:
    done = make_test(tmp_path)
    assert done.returncode == 0, done.stderr
    ran = [line for line in done.stdout.splitlines() if line.startswith("ran: ")]
    assert ran == [f"ran: -m pytest --durations=15 {suite}" for suite in SUITES]
    for suite in SUITES:
        assert f"make test: pytest {suite}: " in done.stdout and " s, exit 0" in done.stdout


def test_a_failing_pytest_process_fails_the_target_after_its_time(tmp_path: Path) -> None:
    done = make_test(tmp_path, failing="tests/cluster")
    assert done.returncode != 0
    assert "make test: pytest tests/cluster: " in done.stdout and " s, exit 3" in done.stdout
    assert "tests/docker" not in done.stdout  # make stops at the first failing process, as before
