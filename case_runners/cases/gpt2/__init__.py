"""gpt2: Megatron-GPT2 345M (transformers GPT2LMHeadModel) pretraining, LAMBADA last-token accuracy."""

from __future__ import annotations

from typing import Any


def plan_problems(params: dict[str, Any]) -> list[tuple[str, str]]:
    """(param, message) for a model that cannot be built: a width its heads do not divide."""
    width, heads = int(params["hidden_size"]), int(params["num_heads"])
    if width % heads:
        return [("num_heads", f"key 'num_heads' is {heads}, which does not divide hidden_size {width}")]
    return []
