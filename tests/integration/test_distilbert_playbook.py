"""ansible-playbook run_case.yml on localhost: distilbert, at a tiny shape from random weights, fine-tunes on a small
generated sentence set in FlagPerf's SST-2 files (tests/sst2_files.py: one word of sentiment decides the label)
through the case's whole data path (the .npz reader, the model, the evaluator) to its own standard target (accuracy
0.91). Seeds 0, 1 and 2 reach it at epoch 2 of the 6 the run allows (case README, "CPU target")."""

from __future__ import annotations

import json

from case_runners.records.names import TARGET_REACHED
from playbook_run import REPO, run_playbook
from sst2_files import VOCAB_SIZE, write_sst2

# A two-layer DistilBERT of width 64 on 16-token sentences; no checkpoint (none can be downloaded).
TINY = {"init_checkpoint": "", "seq_len": 16, "vocab_size": VOCAB_SIZE, "dim": 64, "n_layers": 2, "n_heads": 2,
        "hidden_dim": 128, "batch_size": 16, "eval_batch_size": 128, "num_workers": 0, "lr": 0.002,
        "max_epochs": 6, "log_freq": 100}


def test_distilbert_reaches_its_target_on_flagperfs_sst2_files_through_the_playbook(tmp_path):
    data = write_sst2(tmp_path / "distilbert", train=384, evaluated=128, seq_len=TINY["seq_len"])
    results = tmp_path / "results"
    extra = {"perfplay_results_dir": str(results), "perfplay_run_id": "distilbert-target",
             "perfplay_cases": [{"case": "distilbert", "data_dir": str(data), "overrides": TINY}]}
    run = run_playbook(REPO, "run_case.yml", "-e", json.dumps(extra), timeout=900, env={"OMP_NUM_THREADS": "1"})
    assert run.rc == 0, run.output[-5000:]
    record = json.loads((results / "distilbert-target" / "distilbert_CPUx1x1" / "round1" /
                         "round_record.json").read_text())
    metrics = record["metrics"]
    assert record["status"] == "success" and metrics["converged"], record["reason"]
    assert (metrics["metric"], metrics["target"]) == ("acc", 0.91)
    assert metrics["stop_reason"] == TARGET_REACHED and metrics["final_metric"] >= 0.91, metrics
    assert metrics["epochs"] < TINY["max_epochs"], "reached before its bound"
    assert record["standard"] is False and "init_checkpoint" in record["non_standard"]
    assert record["throughput"]["unit"] == "samples/s" and record["throughput"]["total_p_core"] > 0
    assert record["mfu"]["flops_per_sample"] > 0, "counted at the tiny shape"
