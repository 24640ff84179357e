"""A training rank's memory, estimated from the config (standard library only): the arithmetic every nvidia LLM
config writes in its comments, and a unit test holds each config to its chip's memory with headroom (FITS).

Per rank, in bytes, at a shape, sequence length T, B sequences per micro batch (a config's batch_size /
grad_accumulation: the activations and logits are one micro batch's, freed before the next), R ranks, a sharding
and activation checkpointing on or off; mixed precision is bf16 compute over fp32 weights (the trainer's autocast:
pytorch and torchtitan) or DeepSpeed's bf16 (its bf16 weights and gradients beside fp32 master weights and moments):

  states       weights + gradients + AdamW's two moments: 4 + 4 + 8 = 16 B per parameter under autocast, DeepSpeed's
               2 + 2 + 12 (master copy and moments) as well; divided by R where the sharding partitions them: FSDP2
               and ZeRO-3 all of them, ZeRO-2 the gradients and the optimizer's, ZeRO-1 the optimizer's, DDP none
  gathered     what is materialised whole for compute: FSDP2 gathers fp32 units (4 B) and autocast makes their bf16
               copies (2 B), ZeRO-3 bf16 ones (2 B); the unit computed and the one prefetched, the larger of a decoder
               layer and the vocab's embedding or head; unsharded, one layer's bf16 copies
  activations  per token and layer: the two norms' fp32 inputs (the residual stream) and bf16 outputs, q, k, v and
               the attention's output, and the MLP's gate, up, activation and product (scaled_dot_product_attention
               keeps no T x T scores); 14·D + 4·KV + 8·F bytes in bf16, F the FFN a token goes through (a mixture of
               experts: its top-k experts and the shared one). Checkpointed: every layer's fp32 input (4·D per token)
               and one layer recomputed in backward; else every layer's
  logits       B·T·V: bf16, their fp32 copy, the log-softmax and its gradient: 14 B each
  reserve      the CUDA context, NCCL's buffers and the allocator's slack: RESERVE

Tensor parallelism over P of the R ranks (torchtitan's tensor_parallel, with its sequence parallelism): the states
stay divided by R (FSDP2 over the R / P data-parallel ranks, each of their shards split P ways); a gathered unit is
a P-th of one; every activation above is a P-th (sequence-sharded norms, head-sharded attention, column-sharded MLP)
and each layer also keeps the two bf16 inputs its column-parallel projections all-gathered (4·D bytes per token);
the logits stay whole (the head's vocabulary shards are gathered for the case's loss).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from case_runners.cases.llama import shapes
from case_runners.plan.config.shared_params import GRAD_ACCUMULATION, TENSOR_PARALLEL, micro_batch_size

GB = 1e9
RESERVE = 4 * GB
FITS = 0.85  # a config's estimate is at most this share of its chip's memory: the rest is the estimate's error

DDP, FSDP = "ddp", "fsdp"
ZERO = ("zero0", "zero1", "zero2", "zero3")  # DeepSpeed's ZeRO stages
SHARDINGS = (DDP, FSDP, *ZERO)
TOTAL = "total"  # the last line of Estimate.lines: a config's comment shows it, a unit test reads it back


@dataclass(frozen=True)
class Estimate:
    """Bytes per rank, by part (the module docstring), with the arithmetic of each."""
    parts: dict[str, tuple[float, str]]  # part: (bytes, how)

    @property
    def total(self) -> float:
        return sum(size for size, _ in self.parts.values())

    def lines(self) -> list[str]:
        """The arithmetic as a config's comment shows it, one part a line, then the total."""
        rows = [f"  {name:<12}{how:<76}{size / GB:6.1f} GB" for name, (size, how) in self.parts.items()]
        return [*rows, f"  {TOTAL:<12}{'':<76}{self.total / GB:6.1f} GB"]


def layer_parameters(shape: shapes.Shape) -> int:
    """One decoder layer's weights: attention, MLP (every expert), its two norms and q/k/v biases."""
    biases = shape.hidden + 2 * shape.kv_heads * shape.head_dim if shapes.FAMILIES[shape.family].qkv_bias else 0
    return shapes.attention_weights(shape) + shapes.mlp_weights(shape, shape.experts) + 2 * shape.hidden + biases


def token_ffn(shape: shapes.Shape) -> int:
    """The FFN width a token's activations go through: the dense MLP's, or its top-k experts' and the shared one's."""
    if not shape.experts:
        return shape.intermediate
    return shape.experts_per_token * shape.expert_intermediate + shape.shared_intermediate


def layer_activation_bytes(shape: shapes.Shape) -> int:
    """Bytes one decoder layer keeps for backward per token under bf16 autocast (the module docstring)."""
    return 14 * shape.hidden + 4 * shape.kv_heads * shape.head_dim + 8 * token_ffn(shape)


def estimate(shape: shapes.Shape, seq_len: int, batch: int, ranks: int, sharding: str,
             checkpointing: bool, tensor_parallel: int = 1) -> Estimate:
    """A rank's memory in bf16 mixed precision (the module docstring)."""
    if sharding not in SHARDINGS:
        raise ValueError(f"sharding {sharding!r} (allowed: {', '.join(SHARDINGS)})")
    n = shapes.parameters(shape)
    deepspeed = sharding in ZERO
    weight, grad, optim = (2, 2, 12) if deepspeed else (4, 4, 8)
    stage = ZERO.index(sharding) if deepspeed else (3 if sharding == FSDP else 0)
    shard = [ranks if stage >= s else 1 for s in (3, 2, 1)]  # divisors of weights, gradients, optimizer
    states = n * (weight / shard[0] + grad / shard[1] + optim / shard[2])
    how = (f"{n / 1e9:.2f}B params x ({weight}/{shard[0]} + {grad}/{shard[1]} + {optim}/{shard[2]}) B"
           if ranks > 1 else f"{n / 1e9:.2f}B params x {weight + grad + optim} B")
    tp = tensor_parallel
    if stage == 3 and ranks > 1:  # the unit computed and the one prefetched, gathered whole (a P-th under TP)
        unit, per = max(layer_parameters(shape), shape.vocab * shape.hidden) // tp, 6 if sharding == FSDP else 2
        gathered, gathered_how = 2 * unit * per, f"2 units of {unit / 1e6:.0f}M params x {per} B"
    else:
        layer = layer_parameters(shape)
        gathered, gathered_how = 2 * layer, f"one layer's bf16 copies ({layer / 1e6:.0f}M params x 2 B)"
    tokens = batch * seq_len
    per_layer = layer_activation_bytes(shape)
    if tp > 1:  # a P-th of each, and the two gathered projection inputs whole
        per_layer = per_layer // tp + 4 * shape.hidden
    if checkpointing:
        activations = tokens * (4 * shape.hidden * shape.layers + per_layer)
        act_how = (f"{batch} x {seq_len} tokens x (4 B x {shape.hidden} x {shape.layers} layers + one layer's "
                   f"{per_layer / 1e3:.0f} KB)")
    else:
        activations = tokens * per_layer * shape.layers
        act_how = f"{batch} x {seq_len} tokens x {per_layer / 1e3:.0f} KB x {shape.layers} layers"
    if tp > 1:
        act_how += f" (TP {tp})"
    logits = tokens * shape.vocab * 14
    return Estimate({
        "states": (states, how),
        "gathered": (gathered, gathered_how),
        "activations": (activations, act_how),
        "logits": (logits, f"{batch} x {seq_len} tokens x {shape.vocab} x 14 B"),
        "reserve": (RESERVE, "CUDA context, NCCL, allocator"),
    })


def sharding_of(params: dict[str, Any], framework: str, ranks: int) -> str:
    """The sharding a resolved config trains with: DeepSpeed's ZeRO stage, torchtitan's FSDP2 (with several ranks),
    the pytorch trainer's data_parallel."""
    if framework == "deepspeed":
        return ZERO[int(params["zero_stage"])]
    if framework == "torchtitan":
        return FSDP if ranks > 1 else DDP
    return FSDP if params.get("data_parallel") == FSDP and ranks > 1 else DDP


def of_config(params: dict[str, Any], framework: str, ranks: int) -> Estimate:
    """The estimate of a resolved config's params on `ranks` ranks, at its micro batch."""
    return estimate(shapes.shape_of(params), int(params["seq_len"]),
                    micro_batch_size(int(params["batch_size"]), int(params.get(GRAD_ACCUMULATION, 1))), ranks,
                    sharding_of(params, framework, ranks), bool(params.get("activation_checkpointing")),
                    int(params.get(TENSOR_PARALLEL, 1)))
