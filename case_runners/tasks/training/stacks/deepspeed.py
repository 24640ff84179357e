"""The deepspeed stack: DeepSpeed's engine (ZeRO stage `zero_stage`, its gradient clipping and precision) trains the
case's model with the case's own optimizer and schedule, through the trainer's adapter points
(tasks/training/adapter.py). The trainer keeps the timing, the stop conditions, the evaluation and the events, so the
rank's dllogger stream is written as on the pytorch stack.

The engine adopts the rank's process group (gloo on the CPU, the vendor's backend on an accelerator), made before
(deepspeed.initialize(dist_init_required=False)); a single rank, which perfplay runs without one, gets a one-rank
group of torch's backend for the device on a store of its own (the rank's end destroys it as any group). The model the
case built is the engine's module: ZeRO-3 partitions it in initialize (no zero.Init), so every stage starts from the
same weights as the pytorch stack.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from case_runners.plan.config.shared_params import batch_split

if TYPE_CHECKING:
    from collections.abc import Callable

    from torch import nn

    from case_runners.tasks.training.adapter import AdapterContext

SHM_OP = "deepspeed_shm_comm"
_ENGINES: dict[int, Any] = {}  # id(ctx): the rank's engine (one trainer per rank, the same ctx at every point)


def _ds_config(ctx: AdapterContext) -> dict[str, Any]:
    """DeepSpeed's config of the run: the global batch (global_batch, or batch_size x the ranks) in the trainer's
    grad_accumulation micro batches per rank (tasks/training/accumulation.py), which the trainer splits and steps
    once for: DeepSpeed's gradient accumulation with the boundary the caller's (managed_gradient_accumulation false:
    backward only accumulates, step() reduces where ZeRO has not already and updates); clipping at the case's
    max_grad_norm (0: off)."""
    split = batch_split(ctx.params, ctx.world_size)
    return {
        "train_batch_size": split.global_batch,
        "train_micro_batch_size_per_gpu": split.micro,
        "gradient_accumulation_steps": split.accumulation,
        "managed_gradient_accumulation": False,
        "gradient_clipping": ctx.max_grad_norm,
        "zero_optimization": {"stage": int(ctx.params["zero_stage"])},
        "zero_allow_untested_optimizer": True,  # the case's optimizer (torch's AdamW) is not one of DeepSpeed's
        "bf16": {"enabled": ctx.precision == "bf16"},
        "fp16": {"enabled": ctx.precision == "fp16"},
        "steps_per_print": 2**31 - 1,  # the trainer logs the steps
        "wall_clock_breakdown": False,
    }


def _no_shm_op_on_cpu() -> None:
    """On DeepSpeed's CPU accelerator, mark its C++ op deepspeed_shm_comm unavailable: deepspeed.initialize builds it
    by JIT in TorchBackend.__init__ (deepspeed/comm/torch.py:207, build_shm_op; 2-3 minutes, needs g++), though only
    its inference all-reduce uses it and training never does. Undocumented: deepspeed.ops.__compatible_ops__ is what
    build_shm_op reads."""
    import deepspeed.ops
    from deepspeed.accelerator import get_accelerator

    if get_accelerator().device_name() == "cpu":
        deepspeed.ops.__compatible_ops__[SHM_OP] = False


def _one_rank_group(ctx: AdapterContext) -> None:
    """DeepSpeed's engine needs a process group: at one rank, a group of one (no rendezvous, no port); and
    LOCAL_RANK in the environment (deepspeed/runtime/engine.py asserts it), which the rank's environment has."""
    import torch.distributed as dist

    os.environ.setdefault("LOCAL_RANK", str(ctx.local_rank))
    if ctx.world_size == 1 and not dist.is_initialized():
        backend = dist.Backend.default_device_backend_map.get(ctx.device.type, "gloo")
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)


def create_optimizer(model: nn.Module, ctx: AdapterContext, standard: Callable[[], tuple[Any, Any]]
                     ) -> tuple[Any, Any]:
    """The case's optimizer under DeepSpeed's engine (ZeRO's, at stages 1-3); the case's scheduler, which
    update_model_params steps."""
    optimizer, scheduler = standard()
    _no_shm_op_on_cpu()
    _one_rank_group(ctx)
    import deepspeed

    engine, ds_optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=_ds_config(ctx),
                                                      dist_init_required=False)
    _ENGINES[id(ctx)] = engine
    return ds_optimizer, scheduler


def create_grad_scaler(ctx: AdapterContext) -> None:
    """None: with fp16 DeepSpeed's engine scales the loss itself."""
    return None


def model_to_ddp(model: nn.Module, ctx: AdapterContext) -> nn.Module:
    """The engine (at one rank too): its forward, backward and step are the ones that train."""
    return _ENGINES[id(ctx)]


def backward(step: int, loss: Any, optimizer: Any, scaler: Any, ctx: AdapterContext) -> None:
    """The engine's backward of a micro batch's loss, which the trainer has weighted by its share of the batch
    already (scale_wrt_gas false: DeepSpeed would divide it by gradient_accumulation_steps again)."""
    _ENGINES[id(ctx)].backward(loss, scale_wrt_gas=False)


def update_model_params(step: int, optimizer: Any, scheduler: Any, scaler: Any, ctx: AdapterContext) -> None:
    """The engine's step (gradient clipping, the optimizer, ZeRO's exchange of partitions), then the schedule's."""
    _ENGINES[id(ctx)].step()
    if scheduler is not None:
        scheduler.step()
