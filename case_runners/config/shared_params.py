"""The ranges of the params many cases share, declared once: a case's config.yaml (or inference file) gives
only their defaults. A case's own params carry their range next to their default (case_runners/config/constraints.py).

Bounds are generous: they reject what cannot be meant (a negative batch, NaN, a trillion steps), not what is
unusual. Per rank where it matters; steps and epochs count the whole run; 0 means "off" where the case says so.
"""

from __future__ import annotations

from typing import Any

SHARED_FILE = "case_runners/config/shared_params.py"
_STEPS = {"type": "int", "min": 0, "max": 100_000_000}
_EPOCHS = {"type": "int", "min": 0, "max": 10_000}
_BATCH = {"type": "int", "min": 1, "max": 65_536}  # per rank
_PATH = {"type": "str", "max_length": 4096}

SHARED_PARAMS: dict[str, dict[str, Any]] = {
    # The trainer's params (training/trainer.py, training/task.py), in every training case.
    "seed": {"type": "int", "min": 0, "max": 2**32 - 1},  # numpy's seed range
    "batch_size": _BATCH,
    "eval_batch_size": _BATCH,
    "max_epochs": _EPOCHS,
    "max_steps": _STEPS,
    "warmup_steps": _STEPS,
    "time_budget_s": {"type": "int", "min": 0, "max": 7 * 24 * 3600},
    "amp": {"type": "bool"},
    "tf32": {"type": "bool"},  # allow TF32 (or the chip's equivalent) for fp32 matmuls and convolutions
    "log_freq": {"type": "int", "min": 1, "max": 1_000_000},
    "eval_every_epochs": _EPOCHS,
    "eval_every_steps": _STEPS,
    "synthetic": {"type": "bool"},
    "num_workers": {"type": "int", "min": 0, "max": 256},  # data loader processes per rank
    # Optimiser and data params with the same meaning in every case that has them.
    "lr": {"type": "float", "above": 0, "max": 10},
    "weight_decay": {"type": "float", "min": 0, "max": 1},
    "momentum": {"type": "float", "min": 0, "below": 1},
    "synthetic_samples": {"type": "int", "min": 1, "max": 100_000_000},
    # The keys of every inference case's configurations.yaml (flops: parse_flops), and its model checkpoint.
    "fp16": {"type": "bool"},
    "compiler": {"type": "str", "nullable": True, "max_length": 64},  # and an engine of the vendor
    "repeat": {"type": "int", "min": 1, "max": 1000},  # passes over the data
    "no_validation": {"type": "bool"},
    "exist_onnx_path": {**_PATH, "nullable": True},
    "exist_compiler_path": {**_PATH, "nullable": True},
    "checkpoint": {**_PATH, "nullable": True},
}
