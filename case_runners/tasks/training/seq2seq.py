"""Sequence-to-sequence generation for evaluation, shared by the encoder-decoder cases (t5_small, transformer): the
trained model's own `generate` (transformers' GenerationMixin), greedy or beam search as FlagPerf's evaluators run
it, and the generated and reference ids back to text for the metric library.

Under FSDP every forward is a collective, and ranks stop generating at different steps: generate runs with
`synced_gpus` there (each rank keeps stepping until all have finished). Each rank must still call generate the same
number of times (equal eval shares).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import nn

IGNORE = -100  # label of positions the loss skips (transformers' convention): read as padding here


@dataclass(frozen=True)
class Decoding:
    """How a case's evaluator generates: FlagPerf's settings for it."""

    max_length: int  # tokens the output may hold, the decoder's start token included (transformers' max_length)
    num_beams: int = 1  # 1 = greedy
    length_penalty: float = 1.0  # beam scores / length ** length_penalty
    early_stopping: bool = True  # beam search ends when num_beams hypotheses are finished


def unwrapped(model: nn.Module) -> nn.Module:
    """The model inside DDP (or DataParallel) wrappers, which have no generate."""
    while isinstance(model, (nn.parallel.DistributedDataParallel, nn.DataParallel)):
        model = model.module
    return model


def is_sharded(model: nn.Module) -> bool:
    """Whether a module of `model` is sharded by FSDP (fully_shard): its forwards are collectives."""
    from torch.distributed.fsdp import FSDPModule

    return any(isinstance(m, FSDPModule) for m in model.modules())


@torch.no_grad()
def generate(model: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
             decoding: Decoding) -> torch.Tensor:
    """(batch, <= max_length) generated ids, the decoder start token first, padded after each sequence's end."""
    inner = unwrapped(model)
    out = cast(Any, inner).generate(input_ids=input_ids, attention_mask=attention_mask, max_length=decoding.max_length,
                                    num_beams=decoding.num_beams, length_penalty=decoding.length_penalty,
                                    early_stopping=decoding.early_stopping, do_sample=False,
                                    synced_gpus=is_sharded(inner))
    return out if isinstance(out, torch.Tensor) else out.sequences


def token_lists(ids: torch.Tensor, special_ids: Sequence[int]) -> list[list[int]]:
    """Each row's ids without the special ones (start, end, padding) and IGNORE labels, as a tokenizer's
    batch_decode(skip_special_tokens=True) reads them (FlagPerf's evaluators)."""
    special = set(special_ids) | {IGNORE}
    return [[token for token in row if token not in special] for row in ids.tolist()]


def texts(ids: torch.Tensor, special_ids: Sequence[int], decode: Callable[[list[int]], str] | None) -> list[str]:
    """Each row as text: `decode` (a tokenizer's) on its tokens, or without a tokenizer (synthetic data) the ids
    themselves, space-separated, so a metric still compares outputs with references token by token."""
    rows = token_lists(ids, special_ids)
    if decode is None:
        return [" ".join(str(token) for token in row) for row in rows]
    return [decode(row).strip() for row in rows]
