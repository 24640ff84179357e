"""Greedy decoding with a KV cache, by hand so that each token is timed: the prefill and the first token (TTFT),
then one forward per next token (a TPOT sample each). No early stop at an end-of-text id: every generation has its
output length. The device is synchronized through the vendor's runtime before every clock read.

Three ways to decode (param `decode`, tasks/generate DECODES), the same greedy tokens:
- eager: transformers' DynamicCache, grown token by token;
- static: a StaticCache allocated once per combination for prompt + output positions and reset between
  generations (fixed shapes and addresses);
- compiled: the static cache, and the one-token step through torch.compile (mode reduce-overhead, CUDA graphs, on
  CUDA; the default mode elsewhere). The prefill stays eager. The first generation of a combination compiles (and
  captures its graphs): it is timed apart as compile_s, never in TTFT or TPOT.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from case_runners.tasks.generate import COMPILED, EAGER, STATIC


@dataclass
class Generation:
    tokens: torch.Tensor  # batch x output_len, int64
    ttft_s: float
    tpot_s: list[float] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return self.ttft_s + sum(self.tpot_s)


def _next_token(model: Callable[..., Any], ids: torch.Tensor, cache: Any) -> torch.Tensor:
    """The greedy next id of every sequence (batch x 1): the argmax of the last position's logits."""
    logits = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1).logits
    return logits[:, -1, :].argmax(dim=-1, keepdim=True)


class Decoder:
    """One way of decoding (`decode`: eager, static or compiled) on a model: its caches and its one-token step."""

    def __init__(self, model: nn.Module, decode: str = EAGER, combinations: int = 1) -> None:
        if decode not in (EAGER, STATIC, COMPILED):
            raise ValueError(f"decode '{decode}': allowed eager, static, compiled")
        self.model, self.decode = model, decode
        self.step: Callable[..., Any] = model
        self.caches: dict[tuple[int, int], Any] = {}
        self.cuda = next(model.parameters()).device.type == "cuda"
        if decode == COMPILED:
            import torch._dynamo.config as dynamo_config

            # one graph per combination's shapes (dynamic=False): keep them all compiled
            dynamo_config.recompile_limit = max(dynamo_config.recompile_limit, combinations + 1)
            self.step = torch.compile(model, mode="reduce-overhead" if self.cuda else "default", fullgraph=True,
                                      dynamic=False)

    @property
    def compiles(self) -> bool:
        """Whether the first generation of a combination compiles (timed apart: compile_s)."""
        return self.decode == COMPILED

    def cache(self, batch: int, length: int) -> Any:
        """An empty cache for `batch` sequences of up to `length` positions: a new DynamicCache, or the
        combination's StaticCache, reset."""
        from transformers import DynamicCache, StaticCache

        config: Any = self.model.config  # a transformers model's PretrainedConfig
        if self.decode == EAGER:
            return DynamicCache(config=config)
        cache = self.caches.get((batch, length))
        if cache is None:
            cache = self.caches[(batch, length)] = StaticCache(config=config, max_cache_len=length)
        else:
            cache.reset()
        return cache

    def next_token(self, token: torch.Tensor, cache: Any) -> torch.Tensor:
        """One decoding step after the prefill."""
        if self.cuda and self.decode == COMPILED:
            torch.compiler.cudagraph_mark_step_begin()  # the last step's graph outputs are no longer read
        return _next_token(self.step, token, cache)


@torch.inference_mode()
def generate(model: nn.Module, prompts: torch.Tensor, output_len: int,
             synchronize: Callable[[], None], decoder: Decoder | None = None) -> Generation:
    """`output_len` greedy tokens after `prompts` (batch x prompt_len, on the model's device), each timed; eager
    decoding unless a decoder says otherwise."""
    decoder = decoder or Decoder(model)
    cache = decoder.cache(int(prompts.shape[0]), int(prompts.shape[1]) + output_len)
    synchronize()
    began = time.perf_counter()
    token = _next_token(model, prompts, cache)
    synchronize()
    last = time.perf_counter()
    found = Generation(tokens=token, ttft_s=last - began)
    tokens = [token]
    for _ in range(output_len - 1):
        token = decoder.next_token(token, cache)
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
