"""The params many cases share, declared once: their ranges, and the trainer's params with their defaults.

A case's config.yaml (or inference file) gives only the default of a shared param, if it needs another than the
one here; a case's own params carry their range next to their default (case_runners/plan/config/constraints.py).

The trainer's params (TrainerParams, and TRAINER_PARAMS from it) are in every training case, with the defaults
here: a case's config.yaml names one only to give it another default (every case gives its batch sizes, which have
none). A vendor config may set any of them but those of TRAINER_RUN_ONLY, which change the workload: only a run
override may.

Bounds are generous: they reject what cannot be meant (a negative batch, NaN, a trillion steps), not what is
unusual. Per rank where it matters; steps and epochs count the whole run; 0 means "off" where the case says so.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

from case_runners.core.errors import PerfplayError

SHARED_FILE = "case_runners/plan/config/shared_params.py"
_STEPS = {"type": "int", "min": 0, "max": 100_000_000}
_EPOCHS = {"type": "int", "min": 0, "max": 10_000}
_BATCH = {"type": "int", "min": 1, "max": 65_536}  # per rank
_PATH = {"type": "str", "max_length": 4096}

AMP_DTYPES = ("fp16", "bf16")  # what amp autocasts to: fp16 trains with a GradScaler, bf16 without


def precision_name(amp: bool, amp_dtype: str, tf32: bool) -> str:
    """What a training round computes in, the name MFU's peak is taken at: amp_dtype with amp, else tf32 or fp32."""
    if amp:
        return amp_dtype
    return "tf32" if tf32 else "fp32"
GRAD_ACCUMULATION = "grad_accumulation"  # TrainerParams.grad_accumulation's name, for those that read it from params


def micro_batch_size(batch_size: int, accumulation: int) -> int:
    """The sequences (samples) of a micro batch: batch_size in `accumulation` equal parts; the plan refuses an
    accumulation that does not divide it (plan/layering.py)."""
    if accumulation < 1 or batch_size % accumulation:
        raise PerfplayError(f"{GRAD_ACCUMULATION} {accumulation} does not divide batch_size {batch_size}")
    return batch_size // accumulation


GLOBAL_BATCH = "global_batch"  # TrainerParams.global_batch's name
BATCH_SIZE = "batch_size"
# The model-parallel params a stack declares where it has them (a vendor stack's stack.yaml params: Megatron's TP and
# PP): the data-parallel ranks are the ranks / their product. A stack with MICRO_BATCH takes its micro batch as a
# param of its own; the others' micro batch is batch_size / grad_accumulation.
TENSOR_PARALLEL, PIPELINE_PARALLEL = "tensor_parallel", "pipeline_parallel"
MODEL_PARALLEL = (TENSOR_PARALLEL, PIPELINE_PARALLEL)
MICRO_BATCH = "micro_batch"
# A stack's expert parallelism where it declares it (Megatron's): a mixture-of-experts layer's experts split over
# expert_parallel ranks, each expert's matrices over expert_tensor_parallel ranks (0: tensor_parallel's, Megatron's
# default). The experts lay their own grid over the ranks: expert tensor x expert x pipeline ranks divide them, and
# the data-parallel ranks (the batch's split) stay those of MODEL_PARALLEL.
EXPERT_PARALLEL, EXPERT_TENSOR_PARALLEL = "expert_parallel", "expert_tensor_parallel"


@dataclasses.dataclass(frozen=True)
class BatchSplit:
    """The global batch of an optimizer step and how the ranks split it: micro x accumulation x data_parallel."""

    global_batch: int
    data_parallel: int  # ranks / (tensor_parallel x pipeline_parallel)
    per_rank: int  # a data-parallel rank's sequences of a step: micro x accumulation
    micro: int
    accumulation: int


def model_parallel(params: Mapping[str, Any]) -> int:
    """The ranks one model replica spans: the product of the stack's MODEL_PARALLEL params (1 where it has none)."""
    size = 1
    for name in MODEL_PARALLEL:
        size *= int(params.get(name, 1))
    return size


def expert_grid(params: Mapping[str, Any]) -> dict[str, int]:
    """The ranks the experts' grid spans, by axis ({} for a stack without EXPERT_PARALLEL): its expert tensor, expert
    and pipeline sizes, whose product divides the ranks."""
    if EXPERT_PARALLEL not in params:
        return {}
    tensor = int(params.get(EXPERT_TENSOR_PARALLEL) or 0) or int(params.get(TENSOR_PARALLEL, 1))
    return {EXPERT_TENSOR_PARALLEL: tensor, EXPERT_PARALLEL: int(params[EXPERT_PARALLEL]),
            PIPELINE_PARALLEL: int(params.get(PIPELINE_PARALLEL, 1))}


def grid_text(grid: Mapping[str, int]) -> str:
    """'expert_tensor_parallel 8 x expert_parallel 8 x pipeline_parallel 2 = 128': a grid and the ranks it spans."""
    return f"{' x '.join(f'{name} {value}' for name, value in grid.items())} = {math.prod(grid.values())}"


def batch_split(params: Mapping[str, Any], world_size: int) -> BatchSplit:
    """The round's global batch and its split over world_size ranks (the plan has checked that it splits:
    plan/layering.py global_batch_problems): global_batch where set, else batch_size x the data-parallel ranks."""
    replica = model_parallel(params)
    dp = max(1, world_size // replica)
    accumulation = int(params.get(GRAD_ACCUMULATION, 1))
    per_rank = int(params[BATCH_SIZE])
    micro = int(params[MICRO_BATCH]) if MICRO_BATCH in params else micro_batch_size(per_rank, accumulation)
    return BatchSplit(int(params.get(GLOBAL_BATCH) or 0) or per_rank * dp, dp, per_rank, micro, accumulation)


DDP, FSDP = "ddp", "fsdp"  # data_parallel: DistributedDataParallel, or FSDP2's fully_shard (plan/config/parallel.py)


_KINDS: dict[str, tuple[Callable[[Any], bool], str]] = {  # a TrainerParams field's type: its test and name
    "int": (lambda value: isinstance(value, int) and not isinstance(value, bool), "an integer"),
    "bool": (lambda value: isinstance(value, bool), "true or false"),
    "str": (lambda value: isinstance(value, str), "a string"),
}


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrainerParams:
    """The trainer's params (tasks/training/trainer.py, tasks/training/task.py) and its cases' data loaders and
    schedules, declared once: each field's metadata is its range (plan/config/constraints.py), its default the
    config's default;
    TRAINER_PARAMS below is derived from them. from_params picks them out of a case's params."""

    # numpy's seed range
    seed: int = field(default=1234, metadata={"type": "int", "min": 0, "max": 2**32 - 1})
    # per rank; no default: every case gives its own
    batch_size: int = field(metadata=_BATCH)
    eval_batch_size: int = field(metadata=_BATCH)
    # micro batches per optimizer step (it divides batch_size). Counted as steps, not given as a micro batch size:
    # batch_size stays the rank's batch of an optimizer step, so the global batch (batch_size x data-parallel
    # ranks), the samples, the steps and the lr schedule mean what they mean at 1, and a config that only needs
    # memory (a smaller micro batch) changes nothing else
    grad_accumulation: int = field(default=1, metadata={"type": "int", "min": 1, "max": _BATCH["max"]})
    # sequences (samples) of an optimizer step over all ranks, split as micro batch x grad_accumulation x the
    # data-parallel ranks (ranks / the stack's tensor x pipeline parallel): the plan sets batch_size to its share
    # and refuses a split that does not divide it (plan/layering.py). 0 = batch_size x the data-parallel ranks
    global_batch: int = field(default=0, metadata={"type": "int", "min": 0, "max": 16_777_216})
    # the whole run's; 0 = off
    max_epochs: int = field(default=0, metadata=_EPOCHS)
    max_steps: int = field(default=0, metadata=_STEPS)
    # the case's learning-rate schedule's
    warmup_steps: int = field(default=0, metadata=_STEPS)
    # bounds the training, evaluation included (the ranks agree at log steps); 0 = off
    time_budget_s: int = field(default=0, metadata={"type": "int", "min": 0, "max": 7 * 24 * 3600})
    # autocast (tasks/training/trainer.py Precision) to amp_dtype; "": the vendor's (vendor.yaml amp_dtype)
    amp: bool = field(default=False, metadata={"type": "bool"})
    amp_dtype: str = field(default="", metadata={"type": "str", "choices": ["", *AMP_DTYPES]})
    # allow TF32 (or the chip's equivalent) for fp32 matmuls and convs
    tf32: bool = field(default=False, metadata={"type": "bool"})
    # with more than one rank
    data_parallel: str = field(default=DDP, metadata={"type": "str", "choices": [DDP, FSDP]})
    # recompute the case's units in backward
    activation_checkpointing: bool = field(default=False, metadata={"type": "bool"})
    # the trained model to <case dir>/checkpoint, after TRAIN_END
    save_checkpoint: bool = field(default=False, metadata={"type": "bool"})
    # a STEP event every log_freq steps
    log_freq: int = field(default=10, metadata={"type": "int", "min": 1, "max": 1_000_000})
    # 0 = off
    eval_every_epochs: int = field(default=1, metadata=_EPOCHS)
    eval_every_steps: int = field(default=0, metadata=_STEPS)
    # random samples of the data's shapes (need not converge); run-only
    synthetic: bool = field(default=False, metadata={"type": "bool"})
    # per rank and evaluation; 0 = the whole eval set; run-only
    eval_max_batches: int = field(default=0, metadata=_STEPS)
    # data loader processes per rank
    num_workers: int = field(default=0, metadata={"type": "int", "min": 0, "max": 256})

    @classmethod
    def from_params(cls, params: Mapping[str, Any], source: str = "the case's params") -> TrainerParams:
        """The trainer's params out of a case's (validated) params, each as its field's type; a PerfplayError
        naming the param and `source` when one is missing or not of its type."""
        values: dict[str, Any] = {}
        for item in dataclasses.fields(cls):
            if item.name not in params:
                raise PerfplayError(f"{source}: the trainer's param '{item.name}' is missing "
                                    f"(declared in {SHARED_FILE})")
            value = params[item.name]
            is_kind, kind_named = _KINDS[item.metadata["type"]]
            if not is_kind(value):
                raise PerfplayError(f"{source}: the trainer's param '{item.name}' is {value!r}, not {kind_named}")
            values[item.name] = value
        return cls(**values)


IMAGE_OPTIMIZERS = ("sgd", "adamw", "rmsprop")
LR_SCHEDULES = ("cosine", "step", "constant")
AUTO_AUGMENTS = ("none", "ra")  # ra: RandAugment

# The trainer's params' ranges, with their defaults: the schema plan/config/constraints.py checks.
TRAINER_PARAMS: dict[str, dict[str, Any]] = {
    item.name: {**item.metadata, **({} if item.default is dataclasses.MISSING else {"default": item.default})}
    for item in dataclasses.fields(TrainerParams)}
TRAINER_RUN_ONLY = ("synthetic", "eval_max_batches")  # only a run override may set them: they change the workload

SHARED_PARAMS: dict[str, dict[str, Any]] = {
    **TRAINER_PARAMS,
    # Optimiser and data params with the same meaning in every case that has them.
    "lr": {"type": "float", "above": 0, "max": 10},
    "weight_decay": {"type": "float", "min": 0, "max": 1},
    "momentum": {"type": "float", "min": 0, "below": 1},
    "synthetic_samples": {"type": "int", "min": 1, "max": 100_000_000},
    # The image classifiers' (case_runners/cases/imagenet/classifier.py, which says what each does).
    "num_classes": {"type": "int", "min": 2, "max": 100_000},
    "channels_last": {"type": "bool"},
    "lr_scaling_batch": {"type": "int", "min": 0, "max": 16_777_216},
    "label_smoothing": {"type": "float", "min": 0, "below": 1},
    "optimizer": {"type": "str", "choices": list(IMAGE_OPTIMIZERS)},
    "norm_weight_decay": {"type": "float", "min": 0, "max": 1, "nullable": True},
    "lr_schedule": {"type": "str", "choices": list(LR_SCHEDULES)},
    "warmup_epochs": {"type": "float", "min": 0, "max": 10_000},
    "warmup_start": {"type": "float", "min": 0, "max": 1},
    "lr_min": {"type": "float", "min": 0, "max": 10},
    "lr_step_epochs": {"type": "float", "above": 0, "max": 10_000},
    "lr_gamma": {"type": "float", "above": 0, "max": 1},
    "mixup_alpha": {"type": "float", "min": 0, "max": 100},
    "cutmix_alpha": {"type": "float", "min": 0, "max": 100},
    "auto_augment": {"type": "str", "choices": list(AUTO_AUGMENTS)},
    "ra_magnitude": {"type": "int", "min": 0, "max": 30},
    "ema_decay": {"type": "float", "min": 0, "below": 1},
    "ema_steps": {"type": "int", "min": 1, "max": 1_000_000},
    "crop_scale_min": {"type": "float", "above": 0, "max": 1},  # the random-resized crop's smallest area share
    "hflip": {"type": "float", "min": 0, "max": 1},  # the training images' horizontal flip probability
    "eval_image_size": {"type": "int", "min": 0, "max": 4096},  # 0 = image_size
    "eval_resize": {"type": "int", "min": 0, "max": 8192},  # 0 = the eval size x 256/224
    # The keys of every inference case's configurations.yaml (flops: parse_flops), and its model checkpoint.
    "fp16": {"type": "bool"},
    "compiler": {"type": "str", "nullable": True, "max_length": 64},  # and an engine of the vendor
    "repeat": {"type": "int", "min": 1, "max": 1000},  # passes over the data
    "no_validation": {"type": "bool"},
    "exist_onnx_path": {**_PATH, "nullable": True},
    "exist_compiler_path": {**_PATH, "nullable": True},
    "checkpoint": {**_PATH, "nullable": True},
}
