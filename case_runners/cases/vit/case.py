"""vit: ViT-B/16 from transformers' ViTConfig (FlagPerf's torchvision vit_b_16: layer-norm eps 1e-6, no dropout);
the recipe is the ImageNet classifier base's (case_runners/cases/imagenet/classifier.py)."""

from __future__ import annotations

from typing import Any

from torch import nn

from case_runners.cases.imagenet.classifier import ImageClassifierCase, Logits
from case_runners.tasks.training.case_api import RunContext, TrainingCase


class ViTCase(ImageClassifierCase):
    def build_network(self) -> nn.Module:
        from transformers import ViTConfig, ViTForImageClassification

        p = self.p
        # num_labels: a keyword of every PreTrainedConfig, which the typed signature leaves out
        config = ViTConfig(  # type: ignore[call-arg]
            image_size=int(p["image_size"]), patch_size=int(p["patch_size"]), hidden_size=int(p["hidden_size"]),
            num_hidden_layers=int(p["num_layers"]), num_attention_heads=int(p["num_heads"]),
            intermediate_size=int(p["intermediate_size"]), layer_norm_eps=1e-6, num_labels=int(p["num_classes"]))
        return Logits(ViTForImageClassification(config))

    def shard_units(self, model: nn.Module) -> list[nn.Module]:
        """data_parallel fsdp: each encoder block on its own."""
        from transformers.models.vit.modeling_vit import ViTLayer

        return [m for m in model.modules() if isinstance(m, ViTLayer)]


def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return ViTCase(params, ctx)
