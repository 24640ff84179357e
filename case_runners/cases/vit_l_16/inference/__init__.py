"""vit_l_16 inference: ViT-L/16 (transformers' ViTForImageClassification at google/vit-large-patch16-224's shape, as
FlagPerf's) on ImageNet val, top-1 accuracy; the data, metric, export and forward passes are the ImageNet
classifiers' (case_runners/cases/imagenet/inference.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from case_runners.cases.imagenet.inference import (
    build_dataloader,
    engine_forward,
    evaluator,
    export_onnx,
    model_forward,
    transformers_classifier,
)

__all__ = ["build_dataloader", "create_model", "engine_forward", "evaluator", "export_model", "model_forward",
           "vit_config"]


def vit_config(config: dict[str, Any]) -> Any:
    """transformers' ViTConfig of the parameters' shape (its other fields at their defaults, as
    google/vit-large-patch16-224's config.json has them: GELU, layer-norm eps 1e-12, qkv bias, no dropout)."""
    from transformers import ViTConfig

    # num_labels: a keyword of every PreTrainedConfig, which the typed signature leaves out
    return ViTConfig(  # type: ignore[call-arg]
        image_size=int(config["image_size"]), patch_size=int(config["patch_size"]),
        hidden_size=int(config["hidden_size"]), num_hidden_layers=int(config["num_layers"]),
        num_attention_heads=int(config["num_heads"]), intermediate_size=int(config["intermediate_size"]),
        num_labels=int(config["num_classes"]))


def create_model(config: dict[str, Any]) -> torch.nn.Module:
    from transformers import ViTForImageClassification

    return transformers_classifier(ViTForImageClassification, vit_config(config), config)


def export_model(model: torch.nn.Module, config: dict[str, Any]) -> Path:
    return export_onnx(model, config, "vit_l_16")
