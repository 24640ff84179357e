"""llama: a decoder LLM (transformers' LlamaForCausalLM) pretrained on a flat token file; the token file format,
its check and its preparation from a text tree are in data.py, dataset.py and prepare.py.

The plan's hooks (standard library only: plan/layering.py imports this package): FLOPs per sample (a token) of
the params' shape and sequence length, their convention, and what the shape cannot hold.
"""

from __future__ import annotations

from typing import Any

from case_runners.cases.llama import data, shapes

FLOPS_CONVENTION = shapes.CONVENTION


def flops_per_sample(params: dict[str, Any]) -> float:
    """Training FLOPs per token of the params' shape at their seq_len (shapes.flops_per_token)."""
    return shapes.flops_per_token(shapes.shape_of(params), int(params["seq_len"]))


def plan_problems(params: dict[str, Any]) -> list[tuple[str, str]]:
    """(param, message) for each problem (the plan names the file that set the param): the shape's, and a
    data_split with no held-out part."""
    try:
        data.split_weights(params)
    except ValueError as exc:
        return [*shapes.plan_problems(params), (data.DATA_SPLIT, str(exc))]
    return shapes.plan_problems(params)
