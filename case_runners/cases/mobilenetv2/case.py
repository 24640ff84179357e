"""mobilenetv2: MobileNetV2 from transformers' MobileNetV2Config, in torchvision's form (FlagPerf's model); the
recipe is the ImageNet classifier base's (case_runners/cases/imagenet/classifier.py)."""

from __future__ import annotations

from typing import Any

from torch import nn

from case_runners.cases.imagenet.classifier import ImageClassifierCase, Logits
from case_runners.tasks.training.case_api import RunContext, TrainingCase


class MobileNetV2Case(ImageClassifierCase):
    def build_network(self) -> nn.Module:
        from transformers import MobileNetV2Config, MobileNetV2ForImageClassification

        p = self.p
        # torchvision's MobileNetV2: symmetric padding (not TensorFlow's), dropout 0.2 before the classifier;
        # num_labels: a keyword of every PreTrainedConfig, which the typed signature leaves out
        config = MobileNetV2Config(  # type: ignore[call-arg]
            image_size=int(p["image_size"]), depth_multiplier=float(p["depth_multiplier"]), tf_padding=False,
            classifier_dropout_prob=0.2, num_labels=int(p["num_classes"]))
        return Logits(MobileNetV2ForImageClassification(config))


def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return MobileNetV2Case(params, ctx)
