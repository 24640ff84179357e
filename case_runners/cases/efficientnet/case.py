"""efficientnet: EfficientNetV2-S (model.py, FlagPerf's torchvision efficientnet_v2_s); the recipe is the ImageNet
classifier base's (case_runners/cases/imagenet/classifier.py)."""

from __future__ import annotations

from typing import Any

from torch import nn

from case_runners.cases.efficientnet.model import EfficientNetV2
from case_runners.cases.imagenet.classifier import ImageClassifierCase
from case_runners.tasks.training.case_api import RunContext, TrainingCase


class EfficientNetCase(ImageClassifierCase):
    def build_network(self) -> nn.Module:
        p = self.p
        return EfficientNetV2(num_classes=int(p["num_classes"]), width=float(p["width_mult"]),
                              depth=float(p["depth_mult"]))


def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return EfficientNetCase(params, ctx)
