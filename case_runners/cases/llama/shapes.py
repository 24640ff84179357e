"""The llama case's model shapes and their FLOPs (standard library only: the plan and the host preflight read them).

A config names a shape (param `model`); `vocab_size` 0 keeps the shape's vocab, another value replaces it (a model
trained on prepare-text's BPE of 4096 ids, say).

FLOPs, the PaLM convention (Chowdhery et al. 2022, appendix B), per token trained:
    6·N + 12·L·H·Q·T
N the weights of the matrix multiplies (every layer's attention and MLP projections, and the output head V·D; the
input embedding is a lookup and the norms are not matrix multiplies), L layers, H heads of Q dims (H·Q = D, the
hidden size), T the sequence length. 6 = 2 FLOPs per multiply-add x 3 (forward, and backward twice); the attention
term counts the scores and the weighted sum over the whole sequence, causal mask or not. A training sample is one
token here, so tokens/s and MFU come from the trainer's samples/s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONVENTION = ("PaLM: 6·N + 12·L·H·Q·T FLOPs per token trained; N = the matmul weights (attention and MLP "
              "projections of every layer, and the output head), L layers, H heads of Q dims, T the sequence length")


@dataclass(frozen=True)
class Shape:
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    max_positions: int  # the context: the longest sequence the model is built for
    rope_theta: float
    tied: bool  # the output head shares the input embedding's weights
    description: str

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


SHAPES = {
    "tiny": Shape(256, 704, 4, 8, 4, 4096, 1024, 10000.0, True,
                  "4 layers of 256, for CPUs and CI: 4.0M parameters with its 4096-id vocab"),
    "1b": Shape(2048, 8192, 16, 32, 8, 128256, 8192, 500000.0, True,
                "Llama 3.2 1B: 16 layers of 2048, grouped-query attention (8 KV heads), 1.24B parameters"),
    "7b": Shape(4096, 11008, 32, 32, 32, 32000, 4096, 10000.0, False,
                "Llama 2 7B: 32 layers of 4096, 6.74B parameters"),
}


def shape_of(params: dict[str, Any]) -> Shape:
    """The shape a config's params name, with its vocab_size (0: the shape's own)."""
    shape = SHAPES[str(params["model"])]
    vocab = int(params.get("vocab_size") or 0)
    return shape if vocab == 0 else Shape(**{**shape.__dict__, "vocab": vocab})


def matmul_weights(shape: Shape) -> int:
    """N of the PaLM convention: every layer's q, k, v, o and gate, up, down projections, and the output head."""
    kv = shape.kv_heads * shape.head_dim
    per_layer = 2 * shape.hidden * shape.hidden + 2 * shape.hidden * kv + 3 * shape.hidden * shape.intermediate
    return shape.layers * per_layer + shape.vocab * shape.hidden


def parameters(shape: Shape) -> int:
    """Every parameter of LlamaForCausalLM of this shape (norm weights and the embedding included)."""
    norms = (2 * shape.layers + 1) * shape.hidden
    embedding = shape.vocab * shape.hidden
    return matmul_weights(shape) + norms + (0 if shape.tied else embedding)


def flops_per_token(shape: Shape, seq_len: int) -> float:
    """Training FLOPs per token: 6·N + 12·L·H·Q·T (module docstring)."""
    return 6.0 * matmul_weights(shape) + 12.0 * shape.layers * shape.heads * shape.head_dim * seq_len


def plan_problems(params: dict[str, Any]) -> list[tuple[str, str]]:
    """(param, message) for what the params ask that the shape cannot hold: a sequence longer than its context."""
    shape = shape_of(params)
    seq_len = int(params["seq_len"])
    if seq_len > shape.max_positions:
        return [("seq_len", f"key 'seq_len' is {seq_len}, longer than the context of model '{params['model']}' "
                f"({shape.max_positions} positions); allowed: 1..{shape.max_positions}")]
    return []
