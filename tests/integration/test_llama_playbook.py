"""ansible-playbook run_case.yml on localhost with the llama case on the Python standard library's source (prepared
here with prepare-text, BPE of 4096 ids): the tiny model reaches its target on one rank and the generate task runs on
the model it saved; two ranks (DDP) train a bounded number of steps; throughputs in tokens/s. One playbook run
for all of it."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from case_runners.core.paths import CHECKPOINT_DIR
from playbook_run import REPO, run_playbook
from process_helpers import RUN_S

STEPS_1X2 = 6


@pytest.fixture(scope="module")
def stdlib_tokens(tmp_path_factory) -> Path:
    """The case's standard data: the stdlib source as BPE token files (as the case README prepares it)."""
    out = tmp_path_factory.mktemp("stdlib") / "stdlib-bpe"
    subprocess.run([sys.executable, "-m", "case_runners", "prepare-text", sysconfig.get_paths()["stdlib"], str(out)],
                   cwd=REPO, check=True, capture_output=True, text=True, timeout=RUN_S)
    return out


# One playbook run for every test of the file (its host checks and set-up made once): the target run saves its
# model, the generate task decodes with it, then two ranks train STEPS_1X2 steps.
RUN_ID = "llama_run"


@pytest.fixture(scope="module")
def llama_run(stdlib_tokens: Path, tmp_path_factory) -> tuple:
    results = tmp_path_factory.mktemp("results")
    selections = [
        {"case": "llama", "data_dir": str(stdlib_tokens), "overrides": {"save_checkpoint": True}},
        {"case": "llama", "task": "generate", "data_dir": str(stdlib_tokens), "overrides": {"checkpoint": "trained"}},
        {"case": "llama", "nproc": 2, "data_dir": str(stdlib_tokens),
         "overrides": {"max_steps": STEPS_1X2, "eval_every_steps": 0}}]
    extra = {"perfplay_results_dir": str(results), "perfplay_run_id": RUN_ID, "perfplay_cases": selections}
    # One thread a rank (the ranks honour a user's OMP_NUM_THREADS): beside the other xdist worker's runs, a rank at
    # both cores' threads crawls (two of these rounds at once on 2 cores: 627 tokens/s each at 2 threads, 2,940 at 1).
    return run_playbook(REPO, "run_case.yml", "-e", json.dumps(extra), timeout=3600,
                        env={"OMP_NUM_THREADS": "1"}), results


def round_record(results: Path, case_id: str) -> dict:
    return json.loads((results / RUN_ID / case_id / "round1" / "round_record.json").read_text())


def test_tiny_llama_reaches_its_target(llama_run):
    run, results = llama_run
    assert run.rc == 0, run.output[-5000:]
    record = round_record(results, "llama_CPUx1x1")
    metrics = record["metrics"]
    assert record["status"] == "success" and metrics["stop_reason"] == "target_reached", metrics
    assert metrics["final_metric"] <= metrics["target"]
    assert record["throughput"]["unit"] == "tokens/s" and record["mfu"]["convention"].startswith("PaLM")
    assert "training (throughput in tokens/s)" in run.output
    log = results / RUN_ID / "llama_CPUx1x1" / "round1" / "localhost_noderank0" / "rank0.out.log"
    assert f"target: held-out loss <= {metrics['target']}" in log.read_text()


def test_the_generate_task_runs_on_the_model_it_saved(llama_run):
    run, results = llama_run
    assert run.rc == 0, run.output[-5000:]
    generate = round_record(results, "llama_generate_CPUx1x1")
    weights = generate["metrics"]["checkpoint"]
    assert generate["status"] == "success" and weights.endswith(f"llama_CPUx1x1/{CHECKPOINT_DIR}"), generate["metrics"]
    assert generate["metrics"]["tokens_per_s"] > 0 and generate["metrics"]["ttft_ms"] > 0
    assert "generate (greedy decoding with a KV cache" in run.output


def test_two_ranks_train_a_bounded_number_of_steps(llama_run):
    run, results = llama_run
    assert run.rc == 0, run.output[-5000:]
    record = round_record(results, "llama_CPUx1x2")
    metrics = record["metrics"]
    assert record["status"] == "not_converged" and metrics["stop_reason"] == "max_steps"
    assert metrics["steps"] == STEPS_1X2
    assert metrics["samples"] == STEPS_1X2 * 2 * 8 * 256  # tokens: 2 ranks x 8 sequences of 256
    assert record["throughput"]["unit"] == "tokens/s" and len(record["per_rank"]) == 2
