"""swin_transformer inference (FlagPerf's swinTransformer): Swin-B (torchvision's swin_b that FlagPerf runs, built from
transformers' SwinConfig at its shape) on ImageNet val, top-1 accuracy; the data, metric, export and forward passes
are the ImageNet classifiers' (case_runners/cases/imagenet/inference.py)."""

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
from case_runners.cases.swin_transformer.case import swin_config

__all__ = ["build_dataloader", "create_model", "engine_forward", "evaluator", "export_model", "model_forward"]


def create_model(config: dict[str, Any]) -> torch.nn.Module:
    from transformers import SwinForImageClassification

    return transformers_classifier(SwinForImageClassification, swin_config(config, drop_path_rate=0.0), config)


def export_model(model: torch.nn.Module, config: dict[str, Any]) -> Path:
    return export_onnx(model, config, "swin_transformer", traced=True)
