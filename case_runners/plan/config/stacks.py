"""The training stacks, declared once: the pytorch trainer every training case runs on (the default), and the
built-in stacks a case lists in its config.yaml (`stacks: [deepspeed]`), each with the params only it reads.

A case key's framework field picks the stack (`llama:deepspeed:CPU:1:2:1`; the mapping form's `framework:`). A
built-in stack is a module of trainer adapter points, case_runners/tasks/training/stacks/<name>.py; its pins, where
it has any, are case_runners/tasks/training/stacks/<name>-requirements.txt, which only a run on that stack
installs. A stack's params are vendor-mutable params of every case that lists the stack; a vendor config or a run
override that sets one for another stack is a plan error. A vendor stack may declare one of their names as its own
(tensor_parallel: Megatron's and torchtitan's; stack_of). Its vendor configs are
vendor/<vendor>/cases/<case>/<stack>/config_<HW>x<N>x<P>.yaml (FlagPerf's <case>-<stack>/config/), pytorch's are
vendor/<vendor>/cases/<case>/config_<HW>x<N>x<P>.yaml. Stdlib and the plan's config modules only.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from case_runners.plan.config.shared_params import TENSOR_PARALLEL

PYTORCH = "pytorch"  # the trainer's own stack, implicit in every training case
STACKS_KEY = "stacks"  # the key of a case's config.yaml that lists the built-in stacks it runs on
STACK_DIR = "case_runners/tasks/training/stacks"
COMPILE, FLOAT8 = "compile", "float8"  # torchtitan's params below
# A mixture of experts' load-balancing loss coefficient: the llama case's param and the key of the stack inputs'
# model; every stack trains lm loss + it x the routers' Switch loss (a log parser adds a stack's logged one).
ROUTER_AUX_LOSS = "router_aux_loss_coef"

# Each built-in stack's params: {name: range and default} (plan/config/constraints.py).
STACK_PARAMS: dict[str, dict[str, dict[str, Any]]] = {
    # ZeRO's stage (0: data parallel only; 1: optimizer state, 2: + gradients, 3: + parameters partitioned). The
    # default is FlagPerf's chatglm3_6b (training/benchmarks/chatglm3_6b/deepspeed/ds_config.json, "stage": 3),
    # which its six vendors run as is; baichuan2_13b's reference is 1 (training/benchmarks/baichuan2_13b/
    # deepspeed/ds_config.json), iluvatar runs it at 3, metax at 2.
    "deepspeed": {"zero_stage": {"type": "int", "min": 0, "max": 3, "default": 3}},
    # torchtitan's parallelism (stacks/torchtitan.py): tensor_parallel, its tensor and sequence parallelism over
    # that many consecutive ranks (its parallelism.tensor_parallel_degree), FSDP2 over the rest (the data-parallel
    # ranks: the ranks / tensor_parallel). compile: its torch.compile of each transformer block (inductor,
    # fullgraph), as its --compile.enable with components model. float8: its Float8LinearConverter (torchao's
    # Float8Linear, rowwise scaling) on the blocks' linear layers.
    "torchtitan": {TENSOR_PARALLEL: {"type": "int", "min": 1, "max": 64, "default": 1},
                   COMPILE: {"type": "bool", "default": False}, FLOAT8: {"type": "bool", "default": False}},
}
# The stacks whose pins are installed without their declared dependencies (pip --no-deps): torchtitan 0.3.0 declares
# its trainer's (datasets, wandb, ...), which the stack never imports and which would move perfplay's pinned tree.
NO_DEPS = ("torchtitan",)
STACKS = tuple(STACK_PARAMS)  # the built-in stacks
# The trainer params a stack cannot run other than at their default: {stack: {param: why}} (a plan error names it).
# Every stack but pytorch also keeps data_parallel at ddp: it partitions the model its own way.
STACK_FIXED: dict[str, dict[str, str]] = {
    "deepspeed": {
        "save_checkpoint": "the trainer saves the module's state_dict, which ZeRO-3 partitions into empty shards; "
                           "DeepSpeed's own checkpoint is not written yet",
    },
    "torchtitan": {
        "activation_checkpointing": "the case's activation checkpointing wraps transformers' layers, not "
                                    "torchtitan's model",
        "save_checkpoint": "the case's checkpoint is transformers' model, not torchtitan's",
    },
}

# A stack's params that cannot both leave their defaults: {stack: ((param, other, why), ...)}; the plan refuses the
# first named, allowing its default.
STACK_CONFLICTS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "torchtitan": ((FLOAT8, TENSOR_PARALLEL, "torchao's rowwise Float8Linear does not compute on torchtitan's "
                                             "tensor-parallel DTensor weights (torchtitan 0.3.0, torchao 0.18.0)"),),
}

# A stack's bool params that need the chip's peak of a precision (vendor.yaml hardware peak_flops): {stack: {param:
# precision}}; the plan refuses one set true on a chip without that peak.
STACK_PEAKS: dict[str, dict[str, str]] = {"torchtitan": {FLOAT8: "fp8"}}


def stack_of(param: str, own: Collection[str] = ()) -> str | None:
    """The built-in stack whose param this is (None: not a stack param, or one of `own`, the params of the
    selection's vendor stack: a vendor stack may name a param as a built-in stack does, as Megatron's and
    torchtitan's tensor_parallel)."""
    if param in own:
        return None
    return next((stack for stack, params in STACK_PARAMS.items() if param in params), None)


def stack_folder(framework: str) -> str:
    """The vendor case's subfolder of a framework's configs: '' for pytorch, the stack's name for a stack."""
    return "" if framework == PYTORCH else framework


def requirements_file(framework: str) -> str:
    """The stack's pin file, relative to the project root (it need not exist: pytorch has none)."""
    return f"{STACK_DIR}/{framework}-requirements.txt"


def installs_without_deps(requirements: str) -> bool:
    """Whether pip installs this requirements file (relative to the project root) with --no-deps: a NO_DEPS stack's
    pins, which list every package the stack imports."""
    return requirements in {requirements_file(stack) for stack in NO_DEPS}
