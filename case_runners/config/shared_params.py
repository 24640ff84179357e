"""The params many cases share, declared once: their ranges, and the trainer's params with their defaults.

A case's config.yaml (or inference file) gives only the default of a shared param, if it needs another than the
one here; a case's own params carry their range next to their default (case_runners/config/constraints.py).

The trainer's params (TRAINER_PARAMS) are in every training case, with the defaults here: a case's config.yaml
names one only to give it another default (every case gives its batch sizes, which have none). A vendor config
may set any of them but those of TRAINER_RUN_ONLY, which change the workload: only a run override may.

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

AMP_DTYPES = ("fp16", "bf16")  # what amp autocasts to: fp16 trains with a GradScaler, bf16 without
DDP, FSDP = "ddp", "fsdp"  # data_parallel: DistributedDataParallel, or FSDP2's fully_shard (config/parallel.py)

# The trainer's (training/trainer.py, training/task.py) and its cases' data loaders and schedules.
TRAINER_PARAMS: dict[str, dict[str, Any]] = {
    "seed": {"type": "int", "min": 0, "max": 2**32 - 1, "default": 1234},  # numpy's seed range
    "batch_size": _BATCH,  # no default: every case gives its own
    "eval_batch_size": _BATCH,
    "max_epochs": {**_EPOCHS, "default": 0},  # 0 = off
    "max_steps": {**_STEPS, "default": 0},  # 0 = off
    "warmup_steps": {**_STEPS, "default": 0},
    "time_budget_s": {"type": "int", "min": 0, "max": 7 * 24 * 3600, "default": 0},  # 0 = off; bounds the training
    "amp": {"type": "bool", "default": False},
    "amp_dtype": {"type": "str", "choices": ["", *AMP_DTYPES], "default": ""},  # "": the vendor's (vendor.yaml)
    "tf32": {"type": "bool", "default": False},  # allow TF32 (or the chip's equivalent) for fp32 matmuls and convs
    "data_parallel": {"type": "str", "choices": [DDP, FSDP], "default": DDP},  # with more than one rank
    "activation_checkpointing": {"type": "bool", "default": False},  # recompute the case's units in backward
    "save_checkpoint": {"type": "bool", "default": False},  # the trained model to <case dir>/checkpoint
    "log_freq": {"type": "int", "min": 1, "max": 1_000_000, "default": 10},
    "eval_every_epochs": {**_EPOCHS, "default": 1},  # 0 = off
    "eval_every_steps": {**_STEPS, "default": 0},  # 0 = off
    "synthetic": {"type": "bool", "default": False},  # random samples of the data's shapes (need not converge)
    "eval_max_batches": {**_STEPS, "default": 0},  # per rank and evaluation; 0 = the whole eval set
    "num_workers": {"type": "int", "min": 0, "max": 256, "default": 0},  # data loader processes per rank
}
TRAINER_RUN_ONLY = ("synthetic", "eval_max_batches")  # only a run override may set them: they change the workload

SHARED_PARAMS: dict[str, dict[str, Any]] = {
    **TRAINER_PARAMS,
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
