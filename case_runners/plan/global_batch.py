"""The global batch of a selection (the trainer param global_batch, plan/config/shared_params.py): checked against the
ranks and the stack's parallelism before any host is touched, and turned into each data-parallel rank's batch_size.

    micro batch x grad_accumulation x data-parallel ranks == global_batch,
    data-parallel ranks = ranks / (tensor_parallel x pipeline_parallel)   (the stack's, where it declares them)
    expert_tensor_parallel x expert_parallel x pipeline_parallel divides the ranks   (where it declares them)

the micro batch being the stack's micro_batch param where it has one (Megatron's), else batch_size /
grad_accumulation. A data-parallel rank trains whole sequences, so a global batch the data-parallel ranks do not
divide (FlagPerf's llama2_70B: 44 on 32 GPUs) runs only where tensor or pipeline parallelism makes them fewer (TP 8 x
PP 4: one). Also the functional round's batch: the vendor's parallelism at one micro batch, no accumulation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from case_runners.core.errors import ConfigError
from case_runners.plan.config.shared_params import (
    BATCH_SIZE,
    EXPERT_PARALLEL,
    EXPERT_TENSOR_PARALLEL,
    GLOBAL_BATCH,
    GRAD_ACCUMULATION,
    MICRO_BATCH,
    MODEL_PARALLEL,
    expert_grid,
    grid_text,
    model_parallel,
)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _multiples(value: int, of: int) -> str:
    """The multiples of `of` nearest to value, for a message."""
    low = value // of * of
    return " or ".join(str(m) for m in (low, low + of) if m > 0)


def global_batch_problems(params: dict[str, Any], provenance: dict[str, str], base_file: str,
                          world_size: int, layers: list[str]) -> list[ConfigError]:
    """Check the split (the module docstring) and set batch_size to a data-parallel rank's share of a global_batch
    (in params, its provenance the global_batch's file). A batch_size an earlier layer (`layers`: the files in the
    order they were laid) set yields to a later layer's global_batch; one the same or a later layer set must be the
    share. Each error names the key, the file that set it and the values that would fit."""
    def source(key: str) -> str:
        return provenance.get(key, base_file)

    def layer(key: str) -> int:
        return layers.index(source(key)) if source(key) in layers else len(layers)

    replica = model_parallel(params)
    parallel = " x ".join(f"{name} {params[name]}" for name in MODEL_PARALLEL if name in params)
    if world_size % replica:
        key = next((name for name in MODEL_PARALLEL if name in params and int(params[name]) > 1), MODEL_PARALLEL[0])
        return [ConfigError(f"{parallel} = {replica} ranks a model replica spans do not divide the {world_size} "
                            f"ranks of the selection (model-parallel sizes that divide them: "
                            f"{', '.join(map(str, _divisors(world_size)))})", key=key, file=source(key))]
    if problem := _expert_grid_problem(params, world_size, source, layer):
        return [problem]
    dp = world_size // replica
    ranks = f"{dp} data-parallel ranks ({world_size} ranks" + (f" / ({parallel}))" if parallel else ")")
    wanted = int(params.get(GLOBAL_BATCH) or 0)
    if wanted:
        if wanted % dp:
            fits = [d for d in _divisors(wanted) if d <= world_size]
            return [ConfigError(
                f"{wanted} sequences a step is not a multiple of the {ranks}: each data-parallel rank trains whole "
                f"sequences. Values that fit: global_batch {_multiples(wanted, dp)} (a multiple of {dp}), or "
                f"data-parallel ranks dividing {wanted} ({', '.join(map(str, fits))}: fewer ranks, or tensor x "
                f"pipeline parallelism on a stack that has it)", key=GLOBAL_BATCH, file=source(GLOBAL_BATCH))]
        share = wanted // dp
        if source(BATCH_SIZE) != base_file and layer(BATCH_SIZE) >= layer(GLOBAL_BATCH) and \
                params.get(BATCH_SIZE) != share:
            return [ConfigError(f"{params.get(BATCH_SIZE)} is not the data-parallel rank's share of global_batch "
                                f"{wanted} ({source(GLOBAL_BATCH)}) over {ranks}: {share}; leave batch_size out "
                                f"(the plan sets it) and split it with {GRAD_ACCUMULATION}", key=BATCH_SIZE,
                                file=source(BATCH_SIZE), allowed=[share])]
        params[BATCH_SIZE] = share
        provenance[BATCH_SIZE] = source(GLOBAL_BATCH)
    per_rank, accumulation = int(params[BATCH_SIZE]), int(params.get(GRAD_ACCUMULATION, 1))
    if MICRO_BATCH in params and int(params[MICRO_BATCH]) * accumulation != per_rank:
        micro = int(params[MICRO_BATCH])
        total = wanted or per_rank * dp
        pairs = ", ".join(f"{m} x {per_rank // m}" for m in _divisors(per_rank))
        return [ConfigError(
            f"micro_batch {micro} ({source(MICRO_BATCH)}) x {GRAD_ACCUMULATION} {accumulation} x {ranks} is "
            f"{micro * accumulation * dp} sequences a step, not the global batch {total}"
            f"{f' ({source(GLOBAL_BATCH)})' if wanted else ''}. Values that fit (micro_batch x {GRAD_ACCUMULATION}): "
            f"{pairs}", key=GRAD_ACCUMULATION, file=source(GRAD_ACCUMULATION),
            allowed=[per_rank // micro] if per_rank % micro == 0 else None)]
    return []


def _expert_grid_problem(params: dict[str, Any], world_size: int, source: Callable[[str], str],
                         layer: Callable[[str], int]) -> ConfigError | None:
    """The experts' grid (shared_params.expert_grid) where it does not divide the ranks, named by the one of
    expert_parallel and expert_tensor_parallel the latest layer set."""
    grid = expert_grid(params)
    size = math.prod(grid.values())
    if not grid or world_size % size == 0:
        return None
    implied = "" if params.get(EXPERT_TENSOR_PARALLEL) else f" ({EXPERT_TENSOR_PARALLEL} 0: tensor_parallel's)"
    fits = [ep for ep in _divisors(world_size) if world_size % (size // grid[EXPERT_PARALLEL] * ep) == 0]
    key = max((EXPERT_PARALLEL, EXPERT_TENSOR_PARALLEL), key=layer)  # a tie: expert_parallel
    give = f"give {EXPERT_PARALLEL} one of {', '.join(map(str, fits))}, or " if fits else "give "
    axes, _, total = grid_text(grid).rpartition(" = ")
    return ConfigError(f"{axes}{implied} = {total} ranks the experts' grid spans do not divide the {world_size} "
                       f"ranks of the selection: {give}a smaller {EXPERT_TENSOR_PARALLEL} (1: each expert whole "
                       f"on its rank)", key=key, file=source(key),
                       allowed=(fits or None) if key == EXPERT_PARALLEL else None)


FUNCTIONAL_BATCH = (BATCH_SIZE, GRAD_ACCUMULATION, GLOBAL_BATCH)  # what functional_batch sets


def functional_batch(params: dict[str, Any], provenance: dict[str, str], file: str) -> None:
    """A functional round's batch: the vendor's parallelism (its ranks, sharding, tensor and pipeline parallel) at
    one micro batch per data-parallel rank and no accumulation, so that it proves the code runs in seconds. The
    micro batch is the stack's micro_batch, else batch_size / grad_accumulation (where that divides: otherwise
    the plan's accumulation error stands). global_batch 0: the micro batch x the data-parallel ranks."""
    per_rank, accumulation = int(params[BATCH_SIZE]), int(params.get(GRAD_ACCUMULATION, 1))
    if MICRO_BATCH in params:
        micro = int(params[MICRO_BATCH])
    elif per_rank % accumulation == 0:
        micro = per_rank // accumulation
    else:
        return
    for key, value in ((BATCH_SIZE, micro), (GRAD_ACCUMULATION, 1), (GLOBAL_BATCH, 0)):
        if params.get(key) != value:
            params[key], provenance[key] = value, file
