"""The llama case's model: the class of its shape's family (shapes.FAMILIES: transformers' LlamaForCausalLM,
MixtralForCausalLM, Qwen2MoeForCausalLM or GlmForCausalLM, or baichuan.py's) built from the shape (no download),
and its checkpoint: a directory with model.safetensors and model.json (the shape's params it was built with).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from case_runners.cases.llama.shapes import FAMILIES, canonical, shape_of
from case_runners.core import files

if TYPE_CHECKING:  # torch is imported where a model is built: the preflight checks a checkpoint without it
    from torch import nn
    from transformers import LlamaForCausalLM, PretrainedConfig

WEIGHTS_FILE = "model.safetensors"
SHAPE_FILE = "model.json"
SHAPE_PARAMS = ("model", "vocab_size")  # the params that fix a checkpoint's tensors


def model_config(params: dict[str, Any]) -> PretrainedConfig:
    """The transformers config of the params' shape (not for the baichuan family, which has no transformers class)."""
    import transformers

    shape = shape_of(params)
    common: dict[str, Any] = dict(  # attn_implementation: a PretrainedConfig keyword, not in the typed signatures
        vocab_size=shape.vocab, hidden_size=shape.hidden, num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads, num_key_value_heads=shape.kv_heads,
        max_position_embeddings=shape.max_positions,
        rope_parameters={"rope_type": "default", "rope_theta": shape.rope_theta}, rms_norm_eps=shape.norm_eps,
        tie_word_embeddings=shape.tied, attn_implementation="sdpa", use_cache=False, pad_token_id=None)
    if shape.family == "llama":
        return transformers.LlamaConfig(intermediate_size=shape.intermediate, **common)
    if shape.family == "mixtral":
        return transformers.MixtralConfig(intermediate_size=shape.expert_intermediate, num_local_experts=shape.experts,
                                          num_experts_per_tok=shape.experts_per_token, **common)
    if shape.family == "qwen2_moe":  # every layer sparse, the top-k weights not renormalised (Qwen1.5-MoE's)
        return transformers.Qwen2MoeConfig(
            intermediate_size=shape.shared_intermediate, moe_intermediate_size=shape.expert_intermediate,
            shared_expert_intermediate_size=shape.shared_intermediate, num_experts=shape.experts,
            num_experts_per_tok=shape.experts_per_token, decoder_sparse_step=1, mlp_only_layers=[],
            norm_topk_prob=False, qkv_bias=True, **common)
    if shape.family == "glm":  # rotary on half of each head (GlmConfig's partial_rotary_factor), q/k/v biases
        common["rope_parameters"] = {**common["rope_parameters"], "partial_rotary_factor": 0.5}
        return transformers.GlmConfig(intermediate_size=shape.intermediate, head_dim=shape.head_dim,
                                      attention_bias=True, **common)
    raise ValueError(f"model '{params['model']}': family '{shape.family}' has no transformers config")


def build_model(params: dict[str, Any]) -> nn.Module:
    """A freshly initialised model of the params' shape, on the CPU, in fp32 (on the current default device)."""
    import transformers

    if shape_of(params).family == "baichuan":
        from case_runners.cases.llama.baichuan import BaichuanForCausalLM
        return BaichuanForCausalLM(shape_of(params))
    return cast("nn.Module", getattr(transformers, FAMILIES[shape_of(params).family].builder)(model_config(params)))


def decoder_layers(model: nn.Module) -> list[nn.Module]:
    """The model's decoder layers: FSDP's units and activation checkpointing's."""
    return list(cast("LlamaForCausalLM", model).model.layers)


def shape_params(params: dict[str, Any]) -> dict[str, Any]:
    """The shape params, the model by its shape's name (an alias's checkpoint is the shape's)."""
    return {key: canonical(str(params[key])) if key == "model" else params[key] for key in SHAPE_PARAMS}


TIED_KEY = "lm_head.weight"  # a tied shape's output head: the input embedding's weights, stored once


def save_checkpoint(model: nn.Module, directory: str | Path, params: dict[str, Any]) -> Path:
    """The model's checkpoint directory (save_state_dict of its state dict)."""
    return save_state_dict(model.state_dict(), directory, params)


def save_state_dict(state_dict: dict[str, Any], directory: str | Path, params: dict[str, Any]) -> Path:
    """model.safetensors (a full state dict of the model, on the CPU; a tied shape's head left out: it is
    the embedding) and model.json (the shape params) into `directory`, each written atomically."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tied = shape_of(params).tied
    tensors = {name: t.detach().to("cpu").contiguous() for name, t in state_dict.items()
               if not (tied and name == TIED_KEY)}
    with files.replacing_path(directory / WEIGHTS_FILE) as temp:  # whole or absent, no temporary left behind
        save_file(tensors, str(temp))
    files.atomic_write_json(directory / SHAPE_FILE, shape_params(params))
    return directory


def checkpoint_problems(directory: str | Path, params: dict[str, Any]) -> list[str]:
    """Why `directory` is not a checkpoint of the params' shape, naming the file; [] when it is."""
    directory = Path(directory)
    for name in (WEIGHTS_FILE, SHAPE_FILE):
        if not (directory / name).is_file():
            return [f"{directory / name}: missing; a llama checkpoint is a directory with {WEIGHTS_FILE} and "
                    f"{SHAPE_FILE}"]
    try:
        saved = json.loads((directory / SHAPE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [f"{directory / SHAPE_FILE}: not readable JSON ({exc})"]
    wanted = shape_params(params)
    if isinstance(saved, dict) and isinstance(saved.get("model"), str):
        saved = {**saved, "model": canonical(saved["model"])}
    if not isinstance(saved, dict) or any(saved.get(k) != v for k, v in wanted.items()):
        return [f"{directory / SHAPE_FILE}: the checkpoint is of {saved}, the config asks for {wanted}"]
    return []


def load_checkpoint(directory: str | Path, params: dict[str, Any]) -> nn.Module:
    """The model of a checkpoint directory, checked against the params' shape; on the CPU, in fp32."""
    from safetensors.torch import load_file

    problems = checkpoint_problems(directory, params)
    if problems:
        raise ValueError("; ".join(problems))
    model = build_model(params)
    path = Path(directory) / WEIGHTS_FILE
    missing, unexpected = model.load_state_dict(load_file(str(path)), strict=False)
    missing = [name for name in missing if not (shape_of(params).tied and name == TIED_KEY)]
    if missing or unexpected:
        raise ValueError(f"{path}: not a state dict of this shape ({shape_params(params)}); missing "
                         f"{missing[:5]}, unexpected {unexpected[:5]}")
    return model
