"""Real `python -m case_runners run` runs, as a user makes them: a module's short functional run of its cases
(functional_run, short_round), and the ones several test modules only read, each made once per test session
(tests/conftest.py's fixtures, run_once) instead of once per module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

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


def run_once(tmp_path_factory: pytest.TempPathFactory, name: str, *argv: str) -> RealRun:
    """run_case(ARGV), made once per test session: under pytest-xdist (make test: -n 2) by the first worker that asks,
    in the directory the workers share (the session's, above each worker's own: pytest-xdist's recipe), the others
    waiting for it and reading what it wrote there."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return run_case(tmp_path_factory.mktemp(name), *argv)
    results = tmp_path_factory.getbasetemp().parent / name
    with FileLock(f"{results}.lock"):
        done = results / "completed.json"
        if done.exists():
            saved = json.loads(done.read_text())
            return RealRun(subprocess.CompletedProcess(saved["args"], saved["returncode"], saved["stdout"],
                                                       saved["stderr"]), Path(saved["run_dir"]))
        results.mkdir()
        run = run_case(results, *argv)
        done.write_text(json.dumps({"args": run.done.args, "returncode": run.done.returncode,
                                    "stdout": run.done.stdout, "stderr": run.done.stderr, "run_dir": str(run.run_dir)}))
        return run


# A case's functional shape (its tiny model) on synthetic data: 3 steps of 4 samples, evaluation batches of 8.
FUNCTIONAL_3_STEPS = ("--functional", "--no-monitors", "--set", "synthetic=true", "--set", "max_steps=3",
                      "--set", "batch_size=4", "--set", "eval_batch_size=8", "--set", "num_workers=0",
                      "--set", "log_freq=1")


def functional_run(results: Path, *cases: str) -> Path:
    """The cases' FUNCTIONAL_3_STEPS through the direct runner, one command, one round each. Its results dir."""
    run = run_case(results, *cases, *FUNCTIONAL_3_STEPS)
    # 1: a round short of its target
    assert run.done.returncode in (0, 1), run.done.stdout[-3000:] + run.done.stderr[-3000:]
    return results


def short_round(results: Path, case: str) -> tuple[dict, dict]:
    """`case`'s round record in a functional_run's results, checked for what every training round records (its 3
    steps, the case's metric and target, throughput and MFU at the FLOPs counted at the tiny shape), and the metrics
    of rank 0's last evaluation."""
    from case_runners.plan.layering import load_case_base

    (path,) = results.glob(f"run*/{case}_CPUx1x1/round1/round_record.json")
    record = json.loads(path.read_text())
    metrics, target = record["metrics"], load_case_base(case, REPO)[0]["target"]
    assert (metrics["steps"], metrics["stop_reason"]) == (3, "max_steps")
    assert metrics["metric"] == target["metric"] and metrics["target"] == target["value"]
    assert record["throughput"]["unit"] == "samples/s" and metrics["p_core"] > 0 and metrics["p_whole"] > 0
    assert record["mfu"]["basis"] == "p_core" and "1 multiply-add = 2 FLOPs" in record["mfu"]["convention"]
    assert record["mfu"]["flops_per_sample"] > 0, "counted at the run's (tiny) shape"
    node = next(path.parent.glob("*_noderank0"))
    return record, json.loads((node / "rank0.result.json").read_text())["metrics_history"][-1]


# What the shared runs are: a training round of a few steps and an inference round, the monitors sampling often.
DIGITS_5_STEPS = ("digits_cnn", "--set", "max_steps=5", "--monitor-interval-s", "0.2")
DIGITS_INFERENCE = ("digits_cnn", "--task", "inference", "--set", "compiler=null", "--monitor-interval-s", "0.2")
