"""distilbert, bert_hf and longformer: a short real run of each through the direct runner, one command for the three
(their functional shapes on synthetic sequences): a record with throughput, the FLOPs convention and the case's
metric."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from case_runners.core.paths import project_root
from case_runners.plan.layering import load_case_base
from process_helpers import RUN_S

REPO = project_root()
CASES = ("distilbert", "bert_hf", "longformer")


@pytest.fixture(scope="module")
def functional_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cases' functional shapes (tiny models) through the direct runner: 3 steps each on synthetic sentences,
    one command, one round each. Its results dir."""
    results = tmp_path_factory.mktemp("nlp_encoders")
    done = subprocess.run(
        [sys.executable, "-m", "case_runners", "run", *CASES, "--functional", "--results-dir", str(results),
         "--no-monitors", "--set", "synthetic=true", "--set", "max_steps=3", "--set", "batch_size=4",
         "--set", "eval_batch_size=8", "--set", "num_workers=0", "--set", "log_freq=1"],
        cwd=REPO, capture_output=True, text=True, check=False, timeout=RUN_S)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]  # 1: a round short of its target
    return results


@pytest.mark.parametrize("case", CASES)
def test_a_short_run_records_throughput_mfu_and_the_cases_metric(functional_run: Path, case: str) -> None:
    (path,) = functional_run.glob(f"run*/{case}_CPUx1x1/round1/round_record.json")
    record = json.loads(path.read_text())
    metrics, target = record["metrics"], load_case_base(case, REPO)[0]["target"]
    assert (metrics["steps"], metrics["samples"], metrics["stop_reason"]) == (3, 12, "max_steps")
    assert metrics["metric"] == target["metric"] and metrics["target"] == target["value"]
    assert 0 <= metrics["final_metric"] <= 1
    assert record["throughput"]["unit"] == "samples/s" and metrics["p_core"] > 0 and metrics["p_whole"] > 0
    assert record["mfu"]["basis"] == "p_core" and "1 multiply-add = 2 FLOPs" in record["mfu"]["convention"]
    assert record["mfu"]["flops_per_sample"] > 0, "counted at the run's (tiny) shape"
    node = next(path.parent.glob("*_noderank0"))
    evaluated = json.loads((node / "rank0.result.json").read_text())["metrics_history"][-1]
    assert {target["metric"], "eval_loss"} <= set(evaluated)
