"""wav2vec2: wav2vec 2.0 base (transformers Wav2Vec2ForPreTraining) self-supervised pretraining on LibriSpeech."""

from __future__ import annotations

from typing import Any


def plan_problems(params: dict[str, Any]) -> list[tuple[str, str]]:
    """(param, message) for a model or crop that cannot be built: a width its heads or position-convolution groups
    do not divide, a contrastive space its codebook groups do not divide, crops longer than allowed."""
    width, problems = int(params["hidden_size"]), []
    for key, of in (("num_heads", "hidden_size"), ("conv_pos_groups", "hidden_size"), ("latent_groups", "final_dim")):
        size = width if of == "hidden_size" else int(params[of])
        if size % int(params[key]):
            problems.append((key, f"key '{key}' is {params[key]}, which does not divide {of} {size}"))
    if int(params["min_sample_size"]) > int(params["max_sample_size"]):
        problems.append(("min_sample_size", f"key 'min_sample_size' is {params['min_sample_size']}, above "
                                            f"max_sample_size {params['max_sample_size']}"))
    return problems
