"""bigtransfer: BiT-M-R152x2 (FlagPerf's model: ResNetV2-152 at width 2) from transformers' BitConfig, with BiT's
recipe as FlagPerf runs it (training/benchmarks/bigtransfer/pytorch): fine-tuned from BiT-M's released weights
(weights.py), squashed resize and random crop, mean = std = 0.5, SGD without weight decay, linear warmup then a
staircase decay at fixed steps, batch mixup, and FlagPerf's "mAP", the top-1 accuracy as a fraction. The rest is
the ImageNet classifier base's (case_runners/cases/imagenet/classifier.py)."""

from __future__ import annotations

import bisect
import random
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import nn

from case_runners.cases.bigtransfer.data import weights_path
from case_runners.cases.bigtransfer.weights import load_bit_npz
from case_runners.cases.imagenet.classifier import ImageClassifierCase, Logits
from case_runners.tasks.training.case_api import RunContext, TrainingCase

if TYPE_CHECKING:
    from PIL import Image

    from case_runners.cases.imagenet.transforms import Transform

TARGET_METRIC = "mAP"  # FlagPerf's name: np.mean(all_top1) in its trainer, a fraction in [0, 1]


def train_transform(resize: int, crop: int) -> Transform:
    """BiT's: resize to resize x resize (aspect not kept), a random crop x crop, flip with probability 1/2."""

    def apply(img: Image.Image) -> Image.Image:
        from PIL import Image

        img = img.resize((resize, resize), Image.Resampling.BILINEAR)
        left, top = random.randint(0, resize - crop), random.randint(0, resize - crop)
        img = img.crop((left, top, left + crop, top + crop))
        return img.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if random.random() < 0.5 else img

    return apply


def eval_transform(size: int) -> Transform:
    """BiT's: resize to size x size, no crop."""

    def apply(img: Image.Image) -> Image.Image:
        from PIL import Image

        return img.resize((size, size), Image.Resampling.BILINEAR)

    return apply


def staircase(warmup_steps: int, milestones: list[int], gamma: float) -> Callable[[int], float]:
    """BiT's schedule as a factor of lr: linear from 0 over warmup_steps, then times gamma after each milestone."""

    def factor(step: int) -> float:
        if step < warmup_steps:
            return step / warmup_steps
        return gamma ** bisect.bisect_left(milestones, step)

    return factor


class BigTransferCase(ImageClassifierCase):
    target_metric = TARGET_METRIC

    def __init__(self, params: dict[str, Any], ctx: RunContext) -> None:
        super().__init__(params, ctx)
        self.mean = torch.full((1, 3, 1, 1), 0.5 * 255, device=ctx.device)
        self.std = torch.full((1, 3, 1, 1), 0.5 * 255, device=ctx.device)

    def build_network(self) -> nn.Module:
        from transformers import BitConfig, BitForImageClassification

        p = self.p
        # The widths are given x2 with width_factor 1: transformers' Bit applies width_factor to the stages only, not
        # to the stem, the last norm nor the classifier, so it cannot build BiT's x2 models itself.
        # num_labels: a keyword of every PreTrainedConfig, which the typed signature leaves out
        config = BitConfig(  # type: ignore[call-arg]
            layer_type="preactivation", depths=[int(d) for d in p["depths"]],
            hidden_sizes=[int(h) for h in p["hidden_sizes"]], embedding_size=int(p["embedding_size"]),
            num_labels=int(p["num_classes"]))
        model = BitForImageClassification(config)
        head = cast(nn.Linear, model.classifier[-1])
        nn.init.zeros_(head.weight)  # BiT's zero head
        nn.init.zeros_(head.bias)
        path = weights_path(self.ctx.data_dir, p)
        # the transfer: BiT-M's backbone, pre-trained on ImageNet-21k (not into the meta model FLOPs are counted on)
        if path is not None and not head.weight.is_meta:
            load_bit_npz(model, path)
        return Logits(model)

    def train_transforms(self) -> Transform:
        return train_transform(int(self.p["train_resize"]), int(self.p["image_size"]))

    def eval_transforms(self) -> Transform:
        return eval_transform(int(self.p["image_size"]))

    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any | None]:
        p = self.p
        opt = torch.optim.SGD(model.parameters(), lr=float(p["lr"]), momentum=float(p["momentum"]))
        factor = staircase(int(p["warmup_steps"]), sorted(int(s) for s in p["lr_steps"]), float(p["lr_gamma"]))
        return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)

    def evaluate(self, model: nn.Module, eval_loader: Iterable) -> dict[str, float]:
        metrics = super().evaluate(model, eval_loader)
        return {TARGET_METRIC: metrics["acc1"] / 100.0, **metrics}


def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return BigTransferCase(params, ctx)
