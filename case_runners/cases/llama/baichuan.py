"""Baichuan 2's decoder (baichuan2_13b), written from its published architecture (Yang et al. 2023, "Baichuan 2:
Open Large-scale Language Models", and the modeling_baichuan.py of baichuan-inc/Baichuan2-13B-Base): transformers
has no class for it. A Llama decoder (RMSNorm, SwiGLU MLP, no biases) with two differences: ALiBi instead of
rotary positions (a per-head linear bias on the attention scores, no position weights), and a normalised output
head (each vocab row scaled to unit length before the matmul). The fused q/k/v projection is `W_pack`, as there.
No KV cache: the generate task does not offer it (shapes.FAMILIES).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint

from case_runners.cases.llama.shapes import Shape

INIT_STD = 0.02  # the published config's initializer_range


def alibi_slopes(heads: int) -> list[float]:
    """The ALiBi slope of each head (Press et al. 2022): a geometric series for a power of two heads; otherwise
    the nearest lower power's series and every other slope of the next power's (40 heads: 32 + 8)."""
    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-(2.0 ** -(math.log2(n) - 3)))
        return [start ** (i + 1) for i in range(n)]

    if math.log2(heads).is_integer():
        return power_of_two(heads)
    lower = 2 ** math.floor(math.log2(heads))
    return power_of_two(lower) + alibi_slopes(2 * lower)[0::2][:heads - lower]


def alibi_mask(slopes: torch.Tensor, length: int, dtype: torch.dtype) -> torch.Tensor:
    """(heads, length, length): slope x key position, -inf above the diagonal (causal). Softmax drops a row's
    constant, so this is ALiBi's -slope x distance."""
    positions = torch.arange(length, device=slopes.device)
    bias = slopes[:, None, None] * positions[None, None, :].to(slopes.dtype)
    future = positions[None, :] > positions[:, None]
    return bias.masked_fill(future, float("-inf")).to(dtype)


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(hidden)), eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return self.weight * (x.float() * torch.rsqrt(variance + self.eps)).to(x.dtype)


class Attention(nn.Module):
    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.heads, self.head_dim = shape.heads, shape.head_dim
        self.W_pack = nn.Linear(shape.hidden, 3 * shape.hidden, bias=False)
        self.o_proj = nn.Linear(shape.hidden, shape.hidden, bias=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, length, hidden = x.shape
        q, k, v = self.W_pack(x).view(batch, length, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.to(q.dtype))  # q is bf16 under autocast
        return self.o_proj(out.transpose(1, 2).reshape(batch, length, hidden))


class MLP(nn.Module):
    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(shape.hidden, shape.intermediate, bias=False)
        self.up_proj = nn.Linear(shape.hidden, shape.intermediate, bias=False)
        self.down_proj = nn.Linear(shape.intermediate, shape.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(shape.hidden, shape.norm_eps)
        self.self_attn = Attention(shape)
        self.post_attention_layernorm = RMSNorm(shape.hidden, shape.norm_eps)
        self.mlp = MLP(shape)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class BaichuanModel(nn.Module):
    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(shape.vocab, shape.hidden)
        self.layers = nn.ModuleList(DecoderLayer(shape) for _ in range(shape.layers))
        self.norm = RMSNorm(shape.hidden, shape.norm_eps)
        self.slopes: torch.Tensor
        self.register_buffer("slopes", torch.tensor(alibi_slopes(shape.heads)), persistent=False)
        self.checkpointing = False

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(input_ids)
        mask = alibi_mask(self.slopes, input_ids.shape[1], x.dtype)
        for layer in self.layers:
            x = checkpoint(layer, x, mask, use_reentrant=False) if self.checkpointing and self.training \
                else layer(x, mask)
        return self.norm(x)


class NormHead(nn.Module):
    """The output head: each vocab row normalised to unit length, then the matmul."""

    def __init__(self, hidden: int, vocab: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(vocab, hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, F.normalize(self.weight, dim=-1))


@dataclass
class CausalLMOutput:
    logits: torch.Tensor


class BaichuanForCausalLM(nn.Module):
    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.model = BaichuanModel(shape)
        self.lm_head = NormHead(shape.hidden, shape.vocab)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding, NormHead)):
                nn.init.normal_(module.weight, std=INIT_STD)

    def forward(self, input_ids: torch.Tensor) -> CausalLMOutput:
        return CausalLMOutput(self.lm_head(self.model(input_ids)))

    def activation_checkpointing_enable(self, activation_checkpointing_kwargs: dict | None = None) -> None:
        """Recompute each decoder layer in backward (non-reentrant, as the case asks of transformers' models)."""
        self.model.checkpointing = True
