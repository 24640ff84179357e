"""Gradient accumulation (the trainer param grad_accumulation): a rank's batch split into micro batches, each
trained forward and backward with its share of the batch's loss, their gradients summed, one optimizer step.

The gradients are exchanged once per optimizer step where that costs no memory: under DDP (which holds the whole
gradient anyway) the micro batches before the last run in no_sync. FSDP2 reduce-scatters every micro batch, as
torchtitan's own accumulation does: its set_requires_gradient_sync(False) would keep the whole model's unsharded
gradients on every rank between micro batches, the memory FSDP is there to save (cases/llama/memory.py counts
sharded gradients). A stack's engine (DeepSpeed's) is told to accumulate by its own config.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from case_runners.core.errors import PerfplayError
from case_runners.plan.config.shared_params import GRAD_ACCUMULATION


def _tensors(batch: Any) -> list[torch.Tensor]:
    if isinstance(batch, torch.Tensor):
        return [batch]
    if isinstance(batch, dict):
        return [t for value in batch.values() for t in _tensors(value)]
    if isinstance(batch, (list, tuple)):
        return [t for value in batch for t in _tensors(value)]
    raise PerfplayError(f"{GRAD_ACCUMULATION} > 1 splits a batch's tensors along their first dimension: this "
                        f"case's batch holds a {type(batch).__name__}; run it with {GRAD_ACCUMULATION} 1")


def _part(batch: Any, start: int, stop: int) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch[start:stop]
    if isinstance(batch, dict):
        return {key: _part(value, start, stop) for key, value in batch.items()}
    return type(batch)(_part(value, start, stop) for value in batch)


def micro_batches(batch: Any, size: int) -> list[tuple[Any, float]]:
    """The batch (tensors, or dicts, lists and tuples of them, each with the batch's samples as its first
    dimension) in micro batches of `size` samples, the last one shorter where the batch is (an epoch's last), each
    with its share of the batch's samples: the weight of its loss in the batch's mean."""
    tensors = _tensors(batch)
    lengths = {len(t) for t in tensors if t.dim() > 0}
    if len(lengths) != 1 or any(t.dim() == 0 for t in tensors):
        raise PerfplayError(f"{GRAD_ACCUMULATION} > 1 needs every tensor of a batch to have the batch's samples as "
                            f"its first dimension; this case's batch has first dimensions {sorted(lengths)} and "
                            f"{sum(t.dim() == 0 for t in tensors)} scalars: run it with {GRAD_ACCUMULATION} 1")
    (total,) = lengths
    if total <= size:
        return [(batch, 1.0)]
    return [(_part(batch, start, min(start + size, total)), (min(start + size, total) - start) / total)
            for start in range(0, total, size)]


def gradient_sync(model: torch.nn.Module, last: bool) -> contextlib.AbstractContextManager:
    """The context of a micro batch's forward and backward: DDP's no_sync before the last, else nothing (the
    module docstring says why FSDP and the stacks' engines are not held back)."""
    from torch.nn.parallel import DistributedDataParallel

    if not last and isinstance(model, DistributedDataParallel):
        return model.no_sync()
    return contextlib.nullcontext()
