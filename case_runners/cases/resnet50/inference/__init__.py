"""resnet50 inference: ResNet-50 v1.5 (the training case's model) on ImageNet val, top-1 accuracy; the data, metric,
export and forward passes are the ImageNet classifiers' (case_runners/cases/imagenet/inference.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from case_runners.cases.imagenet.inference import (
    build_dataloader,
    engine_forward,
    evaluator,
    export_onnx,
    for_inference,
    model_forward,
)
from case_runners.cases.resnet50.case import ResNetClassifier

__all__ = ["build_dataloader", "create_model", "engine_forward", "evaluator", "export_model", "model_forward"]


def create_model(config: dict[str, Any]) -> torch.nn.Module:
    torch.manual_seed(int(config["seed"]))
    model = ResNetClassifier(config)
    if config.get("checkpoint"):
        model.load_state_dict(torch.load(config["checkpoint"], map_location="cpu", weights_only=True))
    return for_inference(model, config)


def export_model(model: torch.nn.Module, config: dict[str, Any]) -> Path:
    return export_onnx(model, config, "resnet50")
