"""swin_transformer: Swin-T (swin_tiny_patch4_window7_224, FlagPerf's model) from transformers' SwinConfig; the
recipe is the ImageNet classifier base's (case_runners/cases/imagenet/classifier.py)."""

from __future__ import annotations

from typing import Any

from torch import nn

from case_runners.cases.imagenet.classifier import ImageClassifierCase, Logits
from case_runners.tasks.training.case_api import RunContext, TrainingCase

DROP_PATH_RATE = 0.2  # FlagPerf's model_drop_path_rate for swin_tiny (transformers' default is 0.1)


def swin_config(p: dict[str, Any], drop_path_rate: float = DROP_PATH_RATE) -> Any:
    """transformers' SwinConfig of the params' shape (4x4 patches, MLP ratio 4, qkv bias, relative positions only);
    the training case's and the inference part's (Swin-B there)."""
    from transformers import SwinConfig

    # num_labels: a keyword of every PreTrainedConfig, which the typed signature leaves out
    return SwinConfig(  # type: ignore[call-arg]
        image_size=int(p["image_size"]), patch_size=4, embed_dim=int(p["embed_dim"]),
        depths=[int(d) for d in p["depths"]], num_heads=[int(h) for h in p["num_heads"]],
        window_size=int(p["window_size"]), mlp_ratio=4.0, qkv_bias=True, drop_path_rate=drop_path_rate,
        use_absolute_embeddings=False, num_labels=int(p["num_classes"]))


class SwinCase(ImageClassifierCase):
    def build_network(self) -> nn.Module:
        from transformers import SwinForImageClassification

        return Logits(SwinForImageClassification(swin_config(self.p)))


def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return SwinCase(params, ctx)
