"""Greedy decoding with a KV cache, by hand so that each token is timed: the prefill and the first token (TTFT),
then one forward per next token (a TPOT sample each), over transformers' DynamicCache. No early stop at an
end-of-text id: every generation has its output length. The device is synchronized through the vendor's runtime
before every clock read."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn


@dataclass
class Generation:
    tokens: torch.Tensor  # batch x output_len, int64
    ttft_s: float
    tpot_s: list[float] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return self.ttft_s + sum(self.tpot_s)


def _next_token(model: nn.Module, ids: torch.Tensor, cache: Any) -> torch.Tensor:
    """The greedy next id of every sequence (batch x 1): the argmax of the last position's logits."""
    logits = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1).logits
    return logits[:, -1, :].argmax(dim=-1, keepdim=True)


@torch.inference_mode()
def generate(model: nn.Module, prompts: torch.Tensor, output_len: int,
             synchronize: Callable[[], None]) -> Generation:
    """`output_len` greedy tokens after `prompts` (batch x prompt_len, on the model's device), each timed."""
    from transformers import DynamicCache

    config: Any = model.config  # a transformers model's PretrainedConfig
    cache = DynamicCache(config=config)
    synchronize()
    began = time.perf_counter()
    token = _next_token(model, prompts, cache)
    synchronize()
    last = time.perf_counter()
    found = Generation(tokens=token, ttft_s=last - began)
    tokens = [token]
    for _ in range(output_len - 1):
        token = _next_token(model, token, cache)
        synchronize()
        now = time.perf_counter()
        found.tpot_s.append(now - last)
        tokens.append(token)
        last = now
    found.tokens = torch.cat(tokens, dim=1)
    return found


def digest(ids: torch.Tensor) -> str:
    """sha256 of token ids as little-endian int64, their shape included: the same prompts or outputs, the same
    digest on any host."""
    array = np.ascontiguousarray(ids.detach().to("cpu", torch.int64).numpy(), dtype="<i8")
    return hashlib.sha256(repr(array.shape).encode() + array.tobytes()).hexdigest()
