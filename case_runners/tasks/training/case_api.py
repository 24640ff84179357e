"""The contract between the trainer and a standard training case.

`case_runners/cases/<case>/case.py` exposes `build_case(params, ctx) -> TrainingCase`.
The trainer owns the loop, timing, precision, data parallelism (DDP or FSDP) and stop conditions; a case owns the
model, data, optimizer, one step's loss and the evaluator, and optionally what FSDP shards, activation checkpointing
and saving its checkpoint.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch import nn

    from case_runners.rank.driver.events import EventLogger
    from case_runners.vendors.runtime import VendorRuntime


@dataclass
class RunContext:
    rank: int
    local_rank: int
    world_size: int
    device: torch.device
    data_dir: str | None
    log: EventLogger
    runtime: VendorRuntime | None = None  # the vendor's hook: synchronize, memory, versions
    pin_memory: bool = False  # page-locked host batches: the device is not the host
    work_dir: Path | None = None  # the case's directory on this host (beside resolved_config.json)
    # The ranks one model replica spans (a stack's tensor parallelism: plan/config/shared_params.py model_parallel):
    # consecutive ranks, as torchtitan's device mesh lays tensor parallelism innermost. They train the same batches.
    model_parallel: int = 1

    @property
    def data_rank(self) -> int:
        """The rank's data-parallel rank: which share of the data it trains (its replica's)."""
        return self.rank // self.model_parallel

    @property
    def data_ranks(self) -> int:
        """The data-parallel ranks: the shares the data is split into (the ranks / model_parallel)."""
        return self.world_size // self.model_parallel


class TrainingCase(ABC):
    target_metric: str
    max_grad_norm: float = 0.0  # > 0: the trainer clips gradients to this norm

    @abstractmethod
    def build_model(self) -> nn.Module:
        """The model on the CPU; the trainer moves it to the device and wraps it (DDP, or FSDP's fully_shard)."""

    @abstractmethod
    def build_data(self) -> tuple[Iterable, Iterable]:
        """(train loader, eval loader); the train loader shards by data-parallel rank (ctx.data_rank of
        ctx.data_ranks) when there are several."""

    @abstractmethod
    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any | None]:
        """(optimizer, LR scheduler stepped once per optimizer step, or None)."""

    @abstractmethod
    def train_step(self, model: nn.Module, batch: Any) -> tuple[torch.Tensor, int]:
        """Forward pass: (loss, samples in batch). The trainer does backward and the step."""

    @abstractmethod
    def evaluate(self, model: nn.Module, eval_loader: Iterable) -> dict[str, float]:
        """Metrics over the whole eval set, reduced over all ranks. Under FSDP every forward is a collective: each
        rank must call the model the same number of times (equal shares, or padded batches it does not count)."""

    def to_device(self, batch: Any, device: torch.device) -> Any:
        return move_to_device(batch, device)

    def after_step(self, model: nn.Module) -> None:
        """Called after each optimizer step (and the scheduler's), inside the step's timing, with the unwrapped model:
        e.g. to update an average of its weights."""

    def set_epoch(self, epoch: int) -> None:
        """Called before each epoch (1-based); cases with a DistributedSampler set its epoch."""

    def shard_units(self, model: nn.Module) -> list[nn.Module]:
        """data_parallel fsdp: the submodules sharded each on its own (fully_shard), before the root is; each is
        all-gathered only around its own forward and backward (for a transformer: its blocks). []: the root alone."""
        return []

    def enable_activation_checkpointing(self, model: nn.Module) -> None:
        """activation_checkpointing true: make the model recompute its units' activations in the backward pass
        (called before the model is wrapped in DDP or sharded)."""
        raise NotImplementedError(f"case {type(self).__name__} has no activation checkpointing: set "
                                  "activation_checkpointing false")

    def save_checkpoint(self, state_dict: dict[str, Any], directory: Path) -> None:
        """save_checkpoint true: write the trained model into `directory` (rank 0 only, after training). state_dict
        is the full, unsharded state dict of the unwrapped model, on the CPU."""
        raise NotImplementedError(f"case {type(self).__name__} cannot save a checkpoint: set save_checkpoint false")


def move_to_device(batch: Any, device: torch.device) -> Any:
    """Tensors in (nested) tuples, lists and dicts moved to `device`, asynchronously where possible."""
    if hasattr(batch, "to"):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {k: move_to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(move_to_device(v, device) for v in batch)
    return batch


def schedule_steps(p: dict[str, Any], steps_per_epoch: int) -> int:
    """The steps a learning-rate schedule spans: max_steps, or max_epochs of steps_per_epoch where it is 0."""
    return int(p["max_steps"]) or int(p["max_epochs"]) * steps_per_epoch


def warmup_schedule(optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int,
                    decay: str = "cosine", min_factor: float = 0.0) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warmup over `warmup_steps`, then cosine or linear decay to min_factor x the peak at `total_steps`
    (constant after warmup when total_steps <= 0 or decay == "constant")."""
    import torch

    def factor(step: int) -> float:
        if warmup_steps > 0 and step < warmup_steps:
            return (step + 1) / warmup_steps
        if total_steps <= 0 or decay == "constant":
            return 1.0
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        left = 1.0 - progress if decay == "linear" else 0.5 * (1.0 + math.cos(math.pi * progress))
        return min_factor + (1.0 - min_factor) * left

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
