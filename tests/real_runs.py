"""Real `python -m case_runners run` runs, as a user makes them, and the ones several test modules only read: each
is made once per test session (tests/conftest.py's fixtures) instead of once per module."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from process_helpers import RUN_S

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class RealRun:
    done: subprocess.CompletedProcess  # its exit code, stdout (the summary) and stderr (the progress lines)
    run_dir: Path


def run_case(results: Path, *argv: str, env: dict[str, str] | None = None) -> RealRun:
    """`python -m case_runners run ARGV --results-dir RESULTS` from the checkout; its one run directory."""
    done = subprocess.run([sys.executable, "-m", "case_runners", "run", *argv, "--results-dir", str(results)],
                          cwd=REPO, capture_output=True, text=True, timeout=RUN_S, check=False, env=env)
    found = list(results.glob("run*"))
    assert len(found) == 1, f"{argv}: exit {done.returncode}, run directories {found}\n{done.stderr[-3000:]}"
    return RealRun(done, found[0])


# What the shared runs are: a training round of a few steps and an inference round, the monitors sampling often.
DIGITS_5_STEPS = ("digits_cnn", "--set", "max_steps=5", "--monitor-interval-s", "0.2")
DIGITS_INFERENCE = ("digits_cnn", "--task", "inference", "--set", "compiler=null", "--monitor-interval-s", "0.2")
