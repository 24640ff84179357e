"""llama: a decoder LLM (transformers' LlamaForCausalLM) pretrained on a flat token file; the token file format,
its check and its preparation from a text tree are in data.py, dataset.py and prepare.py.

The plan's hooks (standard library only: plan/layering.py imports this package): FLOPs per sample (a token) of
the params' shape and sequence length, their convention, what the shape cannot hold and the shapes each built-in
stack builds (stack_models, stack_refusal); and the inputs a vendor stack trains from (stack_inputs:
tasks/training/vendor_stack.py), with the pytorch stack's data order (stack_order, which reads the data with torch,
in the rank).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from case_runners.cases.llama import data, shapes

FLOPS_CONVENTION = shapes.CONVENTION


def flops_per_sample(params: dict[str, Any]) -> float:
    """Training FLOPs per token of the params' shape at their seq_len (shapes.flops_per_token)."""
    return shapes.flops_per_token(shapes.shape_of(params), int(params["seq_len"]))


def plan_problems(params: dict[str, Any]) -> list[tuple[str, str]]:
    """(param, message) for each problem (the plan names the file that set the param): the shape's, a data_split
    with no held-out part, and an lr_min above lr."""
    problems = shapes.plan_problems(params)
    try:
        data.split_weights(params)
    except ValueError as exc:
        problems.append((data.DATA_SPLIT, str(exc)))
    if float(params["lr_min"]) > float(params["lr"]):
        problems.append(("lr_min", f"key 'lr_min' is {params['lr_min']}, above lr ({params['lr']}): the cosine "
                                   f"decays to it; allowed: 0..{params['lr']}"))
    return problems


def stack_models(framework: str) -> tuple[str, ...] | None:
    """The values of param `model` the built-in stack builds (shapes.STACK_FAMILIES); None: any (a vendor stack)."""
    return shapes.stack_models(framework)


def stack_refusal(model: str, framework: str) -> str | None:
    """Why the built-in stack cannot build model `model` (its family); None where it can."""
    return shapes.stack_refusal(model, framework)


def stack_inputs(params: dict[str, Any], data_dir: str | None) -> dict[str, Any]:
    """What a vendor stack (tasks/training/vendor_stack.py) needs of the case to train the same workload: the shape
    (shapes.py, one definition: every field of the named shape with the params' vocab), seq_len, the data (its dir
    and format: perfplay's token files, or a Megatron indexed dataset's prefix and data_split), the optimizer and
    the lr schedule (case.py build_optimizer: AdamW, weight decay on the matrices only, linear warmup then cosine
    decay to lr_min at max_steps) and the held-out sequences evaluated at the end."""
    shape = shapes.shape_of(params)
    prefixes = data.index_prefixes(data_dir) if data_dir else []
    return {
        "model": {"name": shapes.canonical(str(params["model"])),
                  **{k: v for k, v in dataclasses.asdict(shape).items() if k != "description"},
                  "head_dim": shape.head_dim,
                  # a mixture of experts' load-balancing loss, added to the trained loss times it (0: off)
                  shapes.ROUTER_AUX_LOSS: float(params.get(shapes.ROUTER_AUX_LOSS, 0.0))},
        "seq_len": int(params["seq_len"]),
        "data": {"dir": data_dir,
                 "format": "megatron_indexed" if prefixes else data.FORMAT_NAME,
                 "prefix": str(prefixes[0]) if prefixes else None,
                 "data_split": list(data.split_weights(params)) if prefixes else None},
        "optimizer": {"name": "AdamW", "weight_decay": float(params["weight_decay"]),
                      "weight_decay_on": "matrices (parameters of 2 or more dimensions)",
                      "betas": [float(params["adam_beta1"]), float(params["adam_beta2"])],
                      "eps": float(params["adam_eps"]), "max_grad_norm": float(params["max_grad_norm"])},
        "schedule": {"lr": float(params["lr"]), "warmup_steps": int(params["warmup_steps"]), "decay": "cosine",
                     "min_lr": float(params["lr_min"]), "decay_steps": int(params["max_steps"])},
        "eval": {"samples": int(params["eval_samples"]), "metric": "held_out_loss",
                 "what": "the mean cross-entropy (nats per token) over the first eval.samples sequences of the "
                         "held-out split"},
        "init": {"seed": int(params["seed"]),
                 "what": "the pytorch stack's initial weights: torch.manual_seed(seed), then, before anything else "
                         "draws from torch's generator, the model built on the CPU in fp32 as transformers' class of "
                         "the shape's family (LlamaForCausalLM for llama) of its config (model.py model_config)"},
    }


def stack_order(params: dict[str, Any], data_dir: str | None, rank: int, world_size: int) -> list[list[int]]:
    """The training sequences of each of the rank's max_steps steps in the pytorch stack's order (dataset.py
    step_order): a sequence i is tokens [i * seq_len, (i + 1) * seq_len + 1) of the training split."""
    from case_runners.cases.llama import dataset

    p = {**params, "vocab_size": shapes.shape_of(params).vocab}  # 0: the shape's own, as case.py reads it
    train, _ = dataset.build_datasets(data_dir, p)
    return dataset.step_order(train, int(p["batch_size"]), rank, world_size, int(p["seed"]), int(p["max_steps"]))
