"""The llama case's generate task, rank side: the model to decode with and its prompts (case_runners/tasks/generate/
calls build and prompts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from case_runners.cases.llama.dataset import TokenFile
from case_runners.cases.llama.generate import PROMPT_SPLIT
from case_runners.cases.llama.model import build_model, load_checkpoint
from case_runners.cases.llama.shapes import shape_of


def build(params: dict[str, Any], checkpoint: Path | None) -> nn.Module:
    """The model of the params: a checkpoint directory's weights, or random ones (None); on the CPU, in fp32."""
    return build_model(params) if checkpoint is None else load_checkpoint(checkpoint, params)


def prompts(params: dict[str, Any], data_dir: str | None, batch: int, prompt_len: int) -> torch.Tensor:
    """`batch` prompts of `prompt_len` ids (int64, on the CPU), the same for a seed, batch and length: windows of
    val.bin at seeded offsets with a data_dir, seeded random ids below the vocab without."""
    rng = np.random.default_rng([int(params["seed"]), batch, prompt_len])
    vocab = shape_of(params).vocab
    if not data_dir:
        return torch.from_numpy(rng.integers(0, vocab, size=(batch, prompt_len), dtype=np.int64))
    tokens = TokenFile(data_dir, PROMPT_SPLIT, vocab).tokens
    if len(tokens) < prompt_len:
        raise ValueError(f"{Path(data_dir) / PROMPT_SPLIT}.bin: {len(tokens)} tokens, fewer than a prompt of "
                         f"{prompt_len}")
    offsets = rng.integers(0, len(tokens) - prompt_len + 1, size=batch)
    return torch.from_numpy(np.stack([np.asarray(tokens[o:o + prompt_len], dtype=np.int64) for o in offsets]))
