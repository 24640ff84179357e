"""ansible-playbook run_case.yml on localhost: mobilenetv2 and vit, at tiny shapes, train on prepare-images' JPEGs
(scikit-learn's digits in ImageNet's class-folder layout) through the whole data path (JPEG, Pillow, the recipe's
transforms, the model) to their own standard targets (acc1 68.6 and 79.982), in one run of the playbook. The shapes,
the seeds measured and the margins: the cases' READMEs ("CPU target")."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from case_runners.records.names import TARGET_REACHED
from playbook_run import REPO, run_playbook
from process_helpers import RUN_S

# Digits at 32 px: mirrored digits change class (no flip), small crops lose them (crop_scale_min 0.8); no mixing nor
# RandAugment; AdamW at its rate as is. max_epochs bounds each run: it ends at its target, epochs before that bound.
RECIPE = {"num_classes": 10, "image_size": 32, "crop_scale_min": 0.8, "hflip": 0.0, "batch_size": 32,
          "eval_batch_size": 128, "num_workers": 0, "amp": False, "lr_scaling_batch": 0, "lr": 0.003}
TINY = {"mobilenetv2": {**RECIPE, "depth_multiplier": 0.5, "optimizer": "adamw", "weight_decay": 0.0001,
                        "lr_schedule": "cosine", "max_epochs": 6},
        "vit": {**RECIPE, "patch_size": 8, "hidden_size": 96, "num_layers": 2, "num_heads": 4, "intermediate_size": 192,
                "weight_decay": 0.05, "warmup_epochs": 0.5, "label_smoothing": 0.0, "mixup_alpha": 0.0,
                "cutmix_alpha": 0.0, "auto_augment": "none", "max_epochs": 15}}


@pytest.fixture(scope="module")
def image_run(tmp_path_factory) -> tuple:
    """prepare-images' digits at 32 px, then one playbook run of both cases on them, one thread a rank (the ranks
    honour a user's OMP_NUM_THREADS; one thread keeps these small models fast beside a busy controller)."""
    data = tmp_path_factory.mktemp("digits") / "digits-images"
    subprocess.run([sys.executable, "-m", "case_runners", "prepare-images", str(data), "--size", "32"], cwd=REPO,
                   check=True, capture_output=True, text=True, timeout=RUN_S)
    results = tmp_path_factory.mktemp("results")
    extra = {"perfplay_results_dir": str(results), "perfplay_run_id": "image-cases",
             "perfplay_cases": [{"case": case, "data_dir": str(data), "overrides": TINY[case]} for case in TINY]}
    run = run_playbook(REPO, "run_case.yml", "-e", json.dumps(extra), timeout=1800, env={"OMP_NUM_THREADS": "1"})
    return run, results


@pytest.mark.parametrize("case", sorted(TINY))
def test_a_tiny_classifier_reaches_its_target_on_jpegs_through_the_playbook(image_run, case):
    run, results = image_run
    assert run.rc == 0, run.output[-5000:]
    record = json.loads((results / "image-cases" / f"{case}_CPUx1x1" / "round1" / "round_record.json").read_text())
    metrics = record["metrics"]
    assert record["status"] == "success" and metrics["converged"], record["reason"]
    assert metrics["stop_reason"] == TARGET_REACHED and metrics["final_metric"] >= metrics["target"], metrics
    assert metrics["epochs"] < TINY[case]["max_epochs"], "reached before its bound"
    assert record["standard"] is False and "hflip" in record["non_standard"]
    assert record["environment"]["threads"]["omp_num_threads"] == "1"
    assert record["throughput"]["unit"] == "samples/s" and record["throughput"]["total_p_core"] > 0
    assert record["mfu"]["flops_per_sample"] > 0, "counted at the tiny shape"
    summary = (results / "image-cases" / "summary.md").read_text()
    assert f"{case}_CPUx1x1" in summary and "success" in summary
