"""ansible-playbook run_case.yml with the mmlu inference case on localhost (cpu vendor): 5-shot MMLU on a generated
set in MMLU's CSV layout, a weights folder in transformers' format whose answers are known (mmlu_files), the accuracy
per subject and overall, tokens/s and the shape's FLOPs per token; and the host preflight refusing a malformed row
before anything is launched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from case_runners.cases.llama import shapes
from mmlu_files import EXPECTED_ALL, write_mmlu, write_rows
from playbook_run import REPO, flat, launched_anything, run_playbook
from process_helpers import RUN_S

CASE_ID = "mmlu_inference_CPUx1x1"


def run_mmlu(results: Path, run_id: str, data_dir: Path):
    extra = {"perfplay_results_dir": str(results), "perfplay_run_id": run_id,
             "perfplay_cases": [{"case": "mmlu", "task": "inference", "data_dir": str(data_dir)}]}
    return run_playbook(REPO, "run_case.yml", "-e", json.dumps(extra))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """Written by another process: building the model imports torch._dynamo, which refuses this process once a
    module test has imported Ansible (it patches sys.intern)."""
    root = tmp_path_factory.mktemp("mmlu")
    write = "import sys, pathlib, mmlu_files; mmlu_files.write_data_dir(pathlib.Path(sys.argv[1]))"
    subprocess.run([sys.executable, "-c", write, str(root)], cwd=REPO, check=True, timeout=RUN_S,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])})
    return root


def test_the_case_measures_the_five_shot_accuracy_and_tokens_per_s_through_the_playbook(data_dir: Path,
                                                                                        results_dir: Path):
    run = run_mmlu(results_dir, "run_mmlu", data_dir)
    assert run.rc == 0, run.output[-5000:]
    record = json.loads((results_dir / "run_mmlu" / CASE_ID / "round1" / "round_record.json").read_text())
    metrics = record["metrics"]
    assert record["status"] == "success" and record["standard"] is True
    assert metrics["steps"] == ["a", "b", "c", "g"], "the cpu vendor runs torch alone"
    assert metrics["validation_accuracy"] == pytest.approx(EXPECTED_ALL), "the constructed model answers B"
    log = (results_dir / "run_mmlu" / CASE_ID / "round1" / "localhost_noderank0" / "rank0.out.log").read_text()
    assert "validation: ACC-college_biology: 0.5000" in log and "ACC-high_school_physics: 0.6667" in log
    tokenizer = Tokenizer.from_file(str(data_dir / "tiny_hf" / "tokenizer.json"))
    prompts = [line for line in log.splitlines() if line.startswith("mmlu: 7 questions of 2 subjects, 5-shot")]
    assert prompts and metrics["validation_items"] == int(prompts[0].split()[-1])
    answer = len(tokenizer.encode("Answer: B").tokens)
    assert metrics["validation_items"] > 7 * answer * 6, "prompt tokens, not questions"
    assert metrics["p_validation_core"] > 0
    assert record["mfu"]["flops_per_sample"] == 2 * shapes.matmul_weights(shapes.SHAPES["tiny"])


def test_the_preflight_names_a_malformed_row_before_anything_is_launched(tmp_path: Path, results_dir: Path):
    broken = write_mmlu(tmp_path / "mmlu_dataset" / "data")
    write_rows(broken / "test" / "high_school_physics_test.csv", [("q", "a", "b", "c", "d", "E")])
    (tmp_path / "tiny_hf").mkdir()
    (tmp_path / "tiny_hf" / "tokenizer.json").write_text("{}")  # no weights: random at the shape
    run = run_mmlu(results_dir, "run_broken", tmp_path)
    assert run.rc != 0
    assert flat("high_school_physics_test.csv: row 1: answer 'E' is not one of A, B, C, D") in flat(run.output)
    assert not launched_anything(results_dir / "run_broken")
