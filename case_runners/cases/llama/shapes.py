"""The llama case's model shapes and their FLOPs (standard library only: the plan and the host preflight read them).

A config names a shape (param `model`): FlagPerf's LLMs by FlagPerf's names, each with its family (the class that
builds it, FAMILIES), and tiny ones for CPUs. `vocab_size` 0 keeps the shape's vocab, another value replaces it (a
model trained on prepare-text's BPE of 4096 ids, say). README.md's shape table cites the source of every number.

FLOPs, the PaLM convention (Chowdhery et al. 2022, appendix B), per token trained:
    6·N + 12·L·H·Q·T
N the weights of the matrix multiplies a token goes through (every layer's attention and MLP projections, and the
output head V·D; the input embedding is a lookup and the norms are not matrix multiplies; in a mixture of experts
the router, the experts per token of the routed ones and the shared expert, not the experts a token skips), L
layers, H heads of Q dims (H·Q = D, the hidden size), T the sequence length. 6 = 2 FLOPs per multiply-add x 3
(forward, and backward twice); the attention term counts the scores and the weighted sum over the whole sequence,
causal mask or not. A training sample is one token here, so tokens/s and MFU come from the trainer's samples/s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from case_runners.plan.config.shared_params import EXPERT_PARALLEL, TENSOR_PARALLEL
from case_runners.plan.config.stacks import PYTORCH, ROUTER_AUX_LOSS

CONVENTION = ("PaLM: 6·N + 12·L·H·Q·T FLOPs per token trained; N = the matmul weights a token goes through "
              "(attention and MLP projections of every layer, and the output head; in a mixture of experts the "
              "router, the experts per token and the shared expert), L layers, H heads of Q dims, T the sequence "
              "length")


@dataclass(frozen=True)
class Family:
    """What builds a shape, and what its attention has beyond a Llama's."""
    builder: str  # the class that builds it: transformers' class of that name, or baichuan.py's
    qkv_bias: bool  # the q, k and v projections have biases
    positions: str
    kv_cache: bool  # decodes with transformers' KV cache: the generate task can run it


FAMILIES = {
    "llama": Family("LlamaForCausalLM", False, "rotary", True),
    "mixtral": Family("MixtralForCausalLM", False, "rotary", True),
    "qwen2_moe": Family("Qwen2MoeForCausalLM", True, "rotary", True),
    # ChatGLM3's architecture: rotary on the first half of each head, pairs interleaved (GlmConfig's default
    # partial_rotary_factor 0.5), q/k/v biases, multi-query groups as KV heads, a fused gate/up projection.
    "glm": Family("GlmForCausalLM", True, "rotary on half of each head, pairs interleaved", True),
    # Baichuan 2 13B: ALiBi, no transformers class; baichuan.py writes it from the published architecture.
    "baichuan": Family("BaichuanForCausalLM", False, "ALiBi", False),
}
# The families each built-in stack builds (plan/config/stacks.py); the plan refuses a shape of another family on it
# (stack_models). pytorch trains the case's model (model.py: transformers' class of the family, baichuan.py's) and
# deepspeed wraps that same model in its engine, so both build every family; torchtitan converts it to its llama3
# model, a dense llama (tasks/training/stacks/torchtitan.py).
STACK_FAMILIES: dict[str, tuple[str, ...]] = {PYTORCH: tuple(FAMILIES), "deepspeed": tuple(FAMILIES),
                                              "torchtitan": ("llama",)}


@dataclass(frozen=True)
class Shape:
    hidden: int
    intermediate: int  # the dense MLP's FFN size; 0 where every layer's MLP is a mixture of experts
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    max_positions: int  # the context: the longest sequence the model is built for
    rope_theta: float  # unused by ALiBi
    tied: bool  # the output head shares the input embedding's weights
    description: str
    family: str = "llama"  # FAMILIES
    norm_eps: float = 1e-5
    experts: int = 0  # routed experts per layer (0: dense)
    experts_per_token: int = 0  # top-k
    expert_intermediate: int = 0  # each routed expert's FFN size
    shared_intermediate: int = 0  # the shared expert's FFN size (0: none); Qwen2-MoE gates it with a D x 1 matmul

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


SHAPES = {
    "tiny": Shape(256, 704, 4, 8, 4, 4096, 1024, 10000.0, True,
                  "4 layers of 256, for CPUs and CI: 4.0M parameters with its 4096-id vocab", norm_eps=1e-6),
    "tiny_moe": Shape(256, 0, 4, 8, 4, 4096, 1024, 10000.0, True,
                      "mixtral family for CPUs and CI: tiny with 4 experts of FFN 352, top-2 (as many MLP FLOPs per "
                      "token as tiny)", family="mixtral", norm_eps=1e-6, experts=4, experts_per_token=2,
                      expert_intermediate=352),
    "1b": Shape(2048, 8192, 16, 32, 8, 128256, 8192, 500000.0, True,
                "Llama 3.2 1B: 16 layers of 2048, grouped-query attention (8 KV heads), 1.24B parameters"),
    "llama2_7b": Shape(4096, 11008, 32, 32, 32, 32000, 4096, 10000.0, False,
                       "Llama 2 7B: 32 layers of 4096, 6.74B parameters"),
    "llama3_8b": Shape(4096, 14336, 32, 32, 8, 128256, 8192, 500000.0, False,
                       "Llama 3 8B: 32 layers of 4096, 8 KV heads, 8.03B parameters"),
    "llama2_70b": Shape(8192, 28672, 80, 64, 8, 32000, 4096, 10000.0, False,
                        "Llama 2 70B: 80 layers of 8192, 8 KV heads, 69.0B parameters"),
    "llama3_70b": Shape(8192, 28672, 80, 64, 8, 128256, 8192, 500000.0, False,
                        "Llama 3 70B: 80 layers of 8192, 8 KV heads, 70.6B parameters"),
    "aquila2_7b": Shape(4096, 11008, 32, 32, 32, 100008, 2048, 10000.0, False,
                        "Aquila2 7B: Llama 2 7B's layers with a vocab of 100008, 7.30B parameters"),
    "aquila2_34b": Shape(6144, 24576, 60, 48, 8, 100008, 4096, 10000.0, False,
                         "Aquila2 34B: 60 layers of 6144, 8 KV heads, 33.7B parameters"),
    "aquila2_70b": Shape(8192, 28672, 80, 64, 8, 100008, 4096, 10000.0, False,
                         "Aquila2 70B: Llama 2 70B's layers with a vocab of 100008, 70.1B parameters"),
    "deepseek_7b": Shape(4096, 11008, 30, 32, 32, 102400, 4096, 10000.0, False,
                         "DeepSeek LLM 7B: Llama 2 7B's layers, 30 of them, a vocab of 102400; 6.91B parameters",
                         norm_eps=1e-6),
    "mixtral_8x7b": Shape(4096, 0, 32, 32, 8, 32000, 32768, 1e6, False,
                          "Mixtral 8x7B: 32 layers of 4096, 8 experts of FFN 14336, top-2; 46.7B parameters, 12.9B "
                          "active", family="mixtral", experts=8, experts_per_token=2, expert_intermediate=14336),
    "qwen1.5_moe": Shape(2048, 0, 24, 16, 16, 151936, 8192, 1e6, False,
                         "Qwen1.5-MoE-A2.7B: 24 layers of 2048, 60 experts of FFN 1408, top-4, and a shared expert "
                         "of FFN 5632; 14.3B parameters, 2.7B active", family="qwen2_moe", norm_eps=1e-6,
                         experts=60, experts_per_token=4, expert_intermediate=1408, shared_intermediate=5632),
    "chatglm3_6b": Shape(4096, 13696, 28, 32, 2, 65024, 8192, 10000.0, False,
                         "ChatGLM3 6B: 28 layers of 4096, 2 multi-query groups, half-head rotary, q/k/v biases; "
                         "6.24B parameters", family="glm"),
    "baichuan2_13b": Shape(5120, 13696, 40, 40, 40, 125696, 4096, 0.0, False,
                           "Baichuan 2 13B: 40 layers of 5120, ALiBi, a normalised output head; 13.9B parameters",
                           family="baichuan", norm_eps=1e-6),
}
ALIASES = {"7b": "llama2_7b"}  # the names configs used before FlagPerf's: still valid
MODEL_CHOICES = (*SHAPES, *ALIASES)  # the values param `model` takes (config.yaml's choices, a unit test checks)


def canonical(name: str) -> str:
    """The shape's name for a name or an alias of it."""
    return ALIASES.get(name, name)


def stack_models(framework: str) -> tuple[str, ...] | None:
    """The names (MODEL_CHOICES) of the shapes the built-in stack builds (STACK_FAMILIES); None for another
    framework (a vendor's own stack: what it builds is its own)."""
    families = STACK_FAMILIES.get(framework)
    if families is None:
        return None
    return tuple(name for name in MODEL_CHOICES if SHAPES[canonical(name)].family in families)


def stack_refusal(model: str, framework: str) -> str | None:
    """Why the built-in stack cannot build the shape `model` names; None where it can (or is not built-in)."""
    families, shape = STACK_FAMILIES.get(framework), SHAPES.get(canonical(model))
    if families is None or shape is None or shape.family in families:  # no shape: the plan names the bad model
        return None
    family = shape.family
    return (f"model '{model}' is of the {family} family, which the {framework} stack does not build (it builds "
            f"{', '.join(families)}: case_runners/cases/llama/shapes.py STACK_FAMILIES)")


def shape_of(params: dict[str, Any]) -> Shape:
    """The shape a config's params name, with its vocab_size (0: the shape's own)."""
    shape = SHAPES[canonical(str(params["model"]))]
    vocab = int(params.get("vocab_size") or 0)
    return shape if vocab == 0 else replace(shape, vocab=vocab)


def attention_weights(shape: Shape) -> int:
    """One layer's q, k, v and o projections."""
    kv = shape.kv_heads * shape.head_dim
    return 2 * shape.hidden * shape.hidden + 2 * shape.hidden * kv


def mlp_weights(shape: Shape, experts: int) -> int:
    """One layer's MLP matrices with `experts` of its routed experts (the router and the shared expert whole)."""
    if not shape.experts:
        return 3 * shape.hidden * shape.intermediate
    router = shape.hidden * shape.experts
    shared = 3 * shape.hidden * shape.shared_intermediate + (shape.hidden if shape.shared_intermediate else 0)
    return router + experts * 3 * shape.hidden * shape.expert_intermediate + shared


def matmul_weights(shape: Shape) -> int:
    """N of the PaLM convention: the matmul weights a token goes through (every layer's attention and MLP with its
    experts per token, and the output head); for a dense shape, all of them."""
    routed = shape.experts_per_token if shape.experts else 0
    return shape.layers * (attention_weights(shape) + mlp_weights(shape, routed)) + shape.vocab * shape.hidden


def parameters(shape: Shape, active: bool = False) -> int:
    """Every parameter of the shape's model (norm weights, biases and the embedding included); active: only the
    experts a token goes through (a dense shape's are all active)."""
    routed = shape.experts_per_token if active else shape.experts
    matrices = shape.layers * (attention_weights(shape) + mlp_weights(shape, routed)) + shape.vocab * shape.hidden
    biases = shape.layers * (shape.hidden + 2 * shape.kv_heads * shape.head_dim) if FAMILIES[shape.family].qkv_bias \
        else 0
    norms = (2 * shape.layers + 1) * shape.hidden
    embedding = shape.vocab * shape.hidden
    return matrices + biases + norms + (0 if shape.tied else embedding)


def flops_per_token(shape: Shape, seq_len: int) -> float:
    """Training FLOPs per token: 6·N + 12·L·H·Q·T (module docstring)."""
    return 6.0 * matmul_weights(shape) + 12.0 * shape.layers * shape.heads * shape.head_dim * seq_len


def plan_problems(params: dict[str, Any]) -> list[tuple[str, str]]:
    """(param, message) for what the params ask that the shape cannot hold: a sequence longer than its context, a
    load-balancing loss without experts to balance, expert parallelism (a stack's param) that does not divide its
    experts, tensor parallelism (a stack's param) that does not divide its heads and KV heads."""
    shape = shape_of(params)
    seq_len = int(params["seq_len"])
    if seq_len > shape.max_positions:
        return [("seq_len", f"key 'seq_len' is {seq_len}, longer than the context of model '{params['model']}' "
                f"({shape.max_positions} positions); allowed: 1..{shape.max_positions}")]
    if float(params.get(ROUTER_AUX_LOSS, 0.0)) and not shape.experts:
        return [(ROUTER_AUX_LOSS, f"key '{ROUTER_AUX_LOSS}' is {params[ROUTER_AUX_LOSS]}, but model "
                                  f"'{params['model']}' is dense: only a mixture of experts has a router to balance; "
                                  f"allowed: 0")]
    split = int(params.get(EXPERT_PARALLEL, 1))
    if split > 1 and (not shape.experts or shape.experts % split):
        fits = [n for n in range(1, shape.experts + 1) if shape.experts % n == 0] if shape.experts else [1]
        what = f"its {shape.experts} experts a layer" if shape.experts else "it is dense: no experts to split"
        return [(EXPERT_PARALLEL, f"key '{EXPERT_PARALLEL}' is {split}, but model '{params['model']}' cannot be "
                                  f"split so ({what}); allowed: {', '.join(map(str, fits))}")]
    tp = int(params.get(TENSOR_PARALLEL, 1))
    if tp > 1 and (shape.heads % tp or shape.kv_heads % tp):
        fits = [n for n in range(1, shape.kv_heads + 1) if shape.heads % n == 0 and shape.kv_heads % n == 0]
        return [(TENSOR_PARALLEL, f"key '{TENSOR_PARALLEL}' is {tp}, but model '{params['model']}' cannot be split "
                                  f"so (its {shape.heads} attention heads over {shape.kv_heads} KV heads: each rank "
                                  f"computes whole heads); allowed: {', '.join(map(str, fits))}")]
    return []
