"""`make test` as CI's output shows it (.ci/run runs it): every pytest process lists its slowest tests and prints its
own wall time, and a failing one still fails the target; the unit and report tests, and the module and integration
tests, run in two workers; the cluster and docker suites run side by side, each one's output printed whole. A
stand-in Python records each call, so no suite runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from case_runners.core.paths import project_root
from run_order import LONGEST_FIRST

REPO = project_root()
# The unit and report tests, then the module and integration tests, in two workers, a file per worker at a time
# (pytest-xdist): CI's 2 cores both busy.
SUITES = ["-n 2 --dist loadfile tests/unit tests/report", "-n 2 --dist loadfile tests/modules tests/integration",
          "tests/cluster", "tests/docker"]


def make_test(tmp_path: Path, failing: str = "", script: str = "") -> subprocess.CompletedProcess[str]:
    """`make test` with lint and the venv taken as done (-o) and PY a script that echoes its arguments (then runs
    `script`)."""
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\necho "ran: $*"\n{script}\n'
                      f'case "$*" in *"{failing or "no such suite"}"*) exit 3;; esac\n')
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
    done = make_test(tmp_path, failing="tests/integration")
    assert done.returncode != 0
    assert f"make test: pytest {SUITES[1]}: " in done.stdout and " s, exit 3" in done.stdout
    assert "tests/cluster" not in done.stdout  # make stops at the first failing process


@pytest.mark.parametrize("failing", ["tests/cluster", "tests/docker"])
def test_either_side_by_side_suite_failing_fails_the_target_and_both_print_their_time(tmp_path: Path,
                                                                                      failing: str) -> None:
    done = make_test(tmp_path, failing=failing)
    assert done.returncode != 0
    for suite in ("tests/cluster", "tests/docker"):
        assert f"make test: pytest {suite}: " in done.stdout
        assert done.stdout.split(f"make test: pytest {suite}: ")[1].split("\n")[0].endswith(
            "exit 3" if suite == failing else "exit 0")


def test_the_cluster_and_docker_suites_run_side_by_side_each_output_whole(tmp_path: Path) -> None:
    """The stand-in for the cluster suite waits (up to 20 s) for the docker suite's to have started: run one after
    the other, it would give up and fail the target."""
    started = tmp_path / "docker-started"
    script = (f'case "$*" in *tests/docker*) touch {started}; echo "docker output";; '
              f'*tests/cluster*) i=0; while [ ! -e {started} ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; '
              f'[ -e {started} ] || exit 4; echo "cluster output";; esac')
    done = make_test(tmp_path, script=script)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    cluster, docker = (lines.index(f"ran: -m pytest --durations=15 {suite}") for suite in SUITES[2:])
    # each process's lines together: its command, what it printed, its time
    assert lines[cluster + 1] == "cluster output" and lines[cluster + 2].startswith("make test: pytest tests/cluster: ")
    assert lines[docker + 1] == "docker output" and lines[docker + 2].startswith("make test: pytest tests/docker: ")


def test_the_files_queued_first_are_one_test_file_each():
    """run_order's LONGEST_FIRST names files: one renamed or duplicated would lose its place unnoticed."""
    names = [path.name for path in (REPO / "tests").rglob("test_*.py")]
    assert [name for name in LONGEST_FIRST if names.count(name) != 1] == []
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
