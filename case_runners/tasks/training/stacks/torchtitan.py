"""The torchtitan stack: the llama case trained on torchtitan's llama3 model and its parallelism, by perfplay's trainer.

torchtitan's: the model (torchtitan.models.llama3's Llama3Model, its blocks, fused QKV projection and complex RoPE,
attention through torch's scaled_dot_product_attention), its HF weight mapping (Llama3StateDictAdapter.from_hf,
which reverses the q/k RoPE permutation: torchtitan rotates adjacent pairs, transformers rotates halves) and its
parallelism, in parallelize_llama's order: tensor parallelism (the param tensor_parallel: its llama3 sharding plan,
set_llama3_sharding_config with sequence parallelism, applied by Module.parallelize over the innermost mesh axis),
compile (the param), and FSDP2 over the data-parallel ranks (torchtitan.distributed.fsdp.apply_fsdp_to_decoder:
each block, the embedding, the norm with the head (one unit with the embedding where it is tied) and the root as
FSDP2 units, gradients summed, not averaged), on torchtitan's ParallelDims and device mesh.
perfplay's: the shape (read from the case's transformers config, so both stacks build the same network), the
weights (the case's freshly built model's, loaded into torchtitan's: a pytorch-stack and a torchtitan run start
from the same point), the data (each data-parallel rank its share; a tensor-parallel group's ranks the same), the
loss and samples (the case's own train_step and evaluate run on the model this stack builds: under tensor
parallelism the head's vocabulary shards are gathered for it, torchtitan's loss parallelism is not used), the
optimizer and schedule (the case's AdamW, decaying the matrices only, and its cosine schedule; torchtitan's
default AdamW decays every parameter and its schedule decays linearly), the loop, timing and precision.

Gradient accumulation is the trainer's (grad_accumulation, tasks/training/accumulation.py), as torchtitan's own: its
training.local_batch_size is the micro batch (batch_size / grad_accumulation) and its training.global_batch_size
batch_size x the data-parallel ranks; like torchtitan's train_step, every micro batch's gradients are
reduce-scattered, the loss of each weighted by its share of the batch.

torchtitan's Trainer is not used: it cannot run without an accelerator (it sets a CUDA device at start), and the
loop is what perfplay keeps comparable. Its default attention (flex) has no backward on a CPU and its varlen
attention needs flash kernels; scaled_dot_product_attention runs everywhere (causal over the whole sequence, as
transformers' attention in the pytorch stack is).

Points, in the order the trainer calls them:
    convert_model      the case's LlamaForCausalLM -> torchtitan's Llama3Model of the same shape and weights; with
                       the stack's param float8 its blocks' linear layers torchao's Float8Linear, as torchtitan
                       converts them; with tensor_parallel > 1 its modules carrying the tensor-parallel plan
    create_optimizer   first parallelizes the model as torchtitan does (tensor parallelism, compile, FSDP2: it must
                       shard before the optimizer is made, fully_shard replaces the parameters), then the case's
                       own optimizer
    model_to_ddp       the model create_optimizer sharded, as it is (torchtitan has no DDP: its data parallelism
                       is FSDP2 at any degree)
    backward           the loss over the data-parallel ranks (FSDP sums the gradients under torchtitan's
                       settings), backward
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, cast

import torch
from torch import nn
from torch.distributed.tensor import DTensor

from case_runners.core.errors import PerfplayError
from case_runners.plan.config.shared_params import TENSOR_PARALLEL
from case_runners.plan.config.stacks import COMPILE, FLOAT8

if TYPE_CHECKING:
    from transformers import PretrainedConfig

    from case_runners.tasks.training.adapter import AdapterContext

STACK = "torchtitan"
VERSION = "0.3.0"  # the torchtitan whose API the model and helpers below use
HEAD_FQN = "lm_head"  # the output head's name in torchtitan's llama3 model config
MESH_DIM = "fsdp"  # torchtitan's name for the data-parallel shard dimension of its device mesh


class TitanOutput(NamedTuple):
    """What the case's train_step and evaluate read from a forward: the logits (a tuple: FSDP and DDP find it)."""
    logits: torch.Tensor


class TitanCausalLM(nn.Module):
    """torchtitan's decoder behind the interface the case calls: model(input_ids=...).logits."""

    def __init__(self, decoder: nn.Module) -> None:
        super().__init__()
        self.decoder = decoder

    def forward(self, input_ids: torch.Tensor) -> TitanOutput:
        logits = self.decoder(input_ids)  # positions None: 0..L-1 of every sequence, causal attention
        if isinstance(logits, DTensor):  # tensor parallel: the head's vocabulary shards, gathered for the case's loss
            logits = logits.full_tensor()
        return TitanOutput(logits)


def _import_torchtitan() -> None:
    try:
        import torchtitan  # noqa: F401
    except ImportError as exc:
        raise PerfplayError(f"the {STACK} stack needs torchtitan=={VERSION} and what it imports on the host ({exc}): "
                            f"case_runners/cases/llama/README.md, section torchtitan") from exc


def _check_llama(config: PretrainedConfig) -> None:
    """The transformers config must be one torchtitan's llama3 model can reproduce exactly."""
    model_type = getattr(config, "model_type", None)
    rope = dict(getattr(config, "rope_parameters", None) or {})
    problems = []
    if model_type != "llama":
        problems.append(f"model type '{model_type}' (allowed: llama; torchtitan's llama3 model is a dense llama)")
    if rope.get("rope_type", "default") != "default":
        problems.append(f"RoPE type '{rope.get('rope_type')}' (allowed: default)")
    for key in ("attention_bias", "mlp_bias"):
        if getattr(config, key, False):
            problems.append(f"{key} true (allowed: false)")
    if getattr(config, "hidden_act", "silu") != "silu":
        problems.append(f"hidden_act '{config.hidden_act}' (allowed: silu)")
    if getattr(config, "head_dim", None) not in (None, config.hidden_size // config.num_attention_heads):
        problems.append(f"head_dim {config.head_dim} (allowed: hidden_size / num_attention_heads)")
    if problems:
        raise PerfplayError(f"the {STACK} stack cannot build this model: {'; '.join(problems)}")


def _titan_config(config: PretrainedConfig) -> Any:
    """torchtitan's Llama3Model.Config of the shape of a transformers LlamaConfig (the case's, model.py's
    model_config): the same hidden size, layers, heads, KV heads, FFN size, vocab, RoPE theta, norm eps, context and
    tying; attention by scaled_dot_product_attention. Parameter init is left out: the case's weights are loaded."""
    from torchtitan.models.common import ComplexRoPE, Embedding, Linear, RMSNorm, ScaledDotProductAttention
    from torchtitan.models.common.config_utils import make_ffn_config, make_gqa_config
    from torchtitan.models.llama3 import Llama3Model
    from torchtitan.models.llama3.model import Llama3TransformerBlock

    _check_llama(config)
    dim, heads, vocab, eps = config.hidden_size, config.num_attention_heads, config.vocab_size, config.rms_norm_eps
    rope = ComplexRoPE.Config(dim=dim // heads, max_seq_len=config.max_position_embeddings,
                              theta=float(config.rope_parameters["rope_theta"]), scaling="none")
    layers = [Llama3TransformerBlock.Config(
        attention_norm=RMSNorm.Config(normalized_shape=dim, eps=eps),
        ffn_norm=RMSNorm.Config(normalized_shape=dim, eps=eps),
        attention=make_gqa_config(dim=dim, n_heads=heads, n_kv_heads=config.num_key_value_heads,
                                  wqkv_param_init={}, wo_param_init={},
                                  inner_attention=ScaledDotProductAttention.Config(), fuse_qkv=True, rope=rope),
        feed_forward=make_ffn_config(dim=dim, hidden_dim=config.intermediate_size, w1_param_init={},
                                     w2w3_param_init={}),
    ) for _ in range(config.num_hidden_layers)]
    return Llama3Model.Config(
        dim=dim, vocab_size=vocab, enable_weight_tying=bool(config.tie_word_embeddings), layers=layers,
        tok_embeddings=Embedding.Config(num_embeddings=vocab, embedding_dim=dim),
        norm=RMSNorm.Config(normalized_shape=dim, eps=eps),
        lm_head=Linear.Config(in_features=dim, out_features=vocab))


def convert_model(model: nn.Module, ctx: AdapterContext) -> nn.Module:
    """torchtitan's Llama3Model of the case model's shape, holding the case model's weights (on the CPU); with
    tensor_parallel > 1 its modules carry torchtitan's llama3 tensor and sequence parallel plan, applied by
    create_optimizer."""
    _import_torchtitan()
    from torchtitan.models.llama3 import Llama3StateDictAdapter
    from torchtitan.models.llama3.sharding import set_llama3_sharding_config

    config = _titan_config(model.config)  # type: ignore[arg-type] # a transformers model's config
    if _tensor_parallel(ctx) > 1:
        set_llama3_sharding_config(config, enable_sp=True)  # torchtitan's default: sequence parallel on
    if ctx.params.get(FLOAT8):
        config = _float8(config, ctx)
    decoder = config.build()
    try:
        state = Llama3StateDictAdapter(config, None).from_hf(dict(model.state_dict()))
    except KeyError as exc:
        raise PerfplayError(f"the {STACK} stack has no torchtitan name for the case model's weight {exc}") from exc
    decoder.load_state_dict(state, strict=True)
    return TitanCausalLM(decoder)


def _float8(config: Any, ctx: AdapterContext) -> Any:
    """torchtitan's Float8LinearConverter on the model config: each block's linear layers as torchao's Float8Linear
    (rowwise scaling; a layer with a dimension not a multiple of 16 stays as it is), the output head left in the
    round's precision as torchtitan's llama3 recipe filters its head. The chip needs float8 matrix units (the plan
    checks its fp8 peak); on a CPU only torchao's emulation runs, which the stack's tests use."""
    from torchtitan.components.quantization.float8 import Float8LinearConverter

    settings = Float8LinearConverter.Config(filter_fqns=[HEAD_FQN], emulate=ctx.device.type == "cpu",
                                            model_compile_enabled=bool(ctx.params.get(COMPILE)))
    try:
        return Float8LinearConverter(settings).convert(config)
    except (ImportError, ValueError) as exc:
        raise PerfplayError(f"the {STACK} stack's float8 cannot run here: {exc} (torchao: "
                            f"case_runners/tasks/training/stacks/torchtitan-requirements.txt)") from exc


def _tensor_parallel(ctx: AdapterContext) -> int:
    return int(ctx.params.get(TENSOR_PARALLEL, 1))


def _parallel_dims(ctx: AdapterContext) -> Any:
    """torchtitan's ParallelDims of the round: tensor_parallel ranks (innermost: consecutive ranks) x FSDP over the
    data-parallel rest, its DTensor backend for the model-parallel axes (its partial_dtensor)."""
    from torchtitan.distributed import ParallelDims

    tp = _tensor_parallel(ctx)
    return ParallelDims(dp_replicate=1, dp_shard=ctx.world_size // tp, cp=1, tp=tp, pp=1, ep=1,
                        world_size=ctx.world_size, spmd_backend="partial_dtensor")


def _build_mesh(dims: Any, ctx: AdapterContext) -> None:
    """dims' device mesh on the round's device: torchtitan takes its device type from the accelerator it finds at
    import, cuda where it finds none, so a CPU round names its own."""
    from unittest import mock

    from torchtitan.distributed import parallel_dims

    with mock.patch.object(parallel_dims, "device_type", ctx.device.type):
        dims.build_mesh()


def _compile(decoder: nn.Module, dims: Any) -> None:
    """torchtitan's apply_compile: each transformer block compiled (inductor, fullgraph) after tensor parallelism and
    before FSDP2 wraps it, as its parallelize_llama does; the first step pays the compilation."""
    from torchtitan.config import CompileConfig
    from torchtitan.distributed.compile import apply_compile

    apply_compile(decoder, compile_config=CompileConfig(enable=True, components=["model"]), parallel_dims=dims)


def _shard(decoder: nn.Module, dims: Any) -> None:
    """torchtitan's FSDP2 over the data-parallel ranks (fp32 parameters and reductions: the trainer's autocast is
    the precision)."""
    import torch.distributed as dist
    from torch.distributed.fsdp import FSDPModule
    from torchtitan.distributed.fsdp import apply_fsdp_to_decoder

    apply_fsdp_to_decoder(decoder, dims.get_mesh([MESH_DIM]), param_dtype=torch.float32,
                          reduce_dtype=torch.float32, pp_enabled=False)
    if dist.get_backend() == dist.Backend.GLOO:
        # torchtitan sets FSDP's gradient divide factor to 1, which reduce-scatters with PREMUL_SUM: gloo has
        # none. A plain SUM gives the same gradients (backward divides the loss by the data-parallel ranks instead).
        for module in decoder.modules():
            if isinstance(module, FSDPModule):
                module.set_force_sum_reduction_for_comms(True)


def create_optimizer(model: nn.Module, ctx: AdapterContext, standard: Any) -> tuple[Any, Any]:
    """torchtitan's parallelize_llama, in its order (FSDP2 must shard before the optimizer is made: fully_shard
    replaces the parameters): tensor parallelism (tensor_parallel > 1), compile (the param), FSDP2 over the
    data-parallel ranks (with several); then the case's optimizer and schedule over the parameters as they are."""
    decoder: Any = cast("TitanCausalLM", model).decoder  # convert_model's Llama3Model
    dims = _parallel_dims(ctx)
    if ctx.world_size > 1:
        _build_mesh(dims, ctx)
    if dims.tp > 1:
        decoder.parallelize(dims)
        if decoder.enable_weight_tying:  # parallelize gives each module its own DTensor: tied again, as init_states
            decoder.tok_embeddings.weight = decoder.lm_head.weight
    if ctx.params.get(COMPILE):
        _compile(decoder, dims)
    if ctx.world_size > 1:
        _shard(decoder, dims)
    return standard()


def model_to_ddp(model: nn.Module, ctx: AdapterContext) -> nn.Module:
    """The model create_optimizer sharded: no DDP around it (torchtitan's data parallelism is FSDP2)."""
    return model


def backward(step: int, loss: torch.Tensor, optimizer: Any, scaler: Any, ctx: AdapterContext) -> None:
    """loss.backward(), the loss divided by the data-parallel ranks: torchtitan's FSDP sums their gradients, so
    each one's share of the mean is its loss / their number (the trainer's DDP averages instead). The ranks of a
    tensor-parallel group compute the same loss, and DTensor's backward reduces their parts of each gradient."""
    scaled = loss / (ctx.world_size // _tensor_parallel(ctx))
    (scaler.scale(scaled) if scaler is not None else scaled).backward()
