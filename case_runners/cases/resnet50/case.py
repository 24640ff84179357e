"""resnet50: ResNet-50 v1.5 from transformers' ResNetConfig; SGD, label smoothing, warmup + cosine."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from case_runners.cases.imagenet.classifier import image_loaders
from case_runners.cases.imagenet.dataset import build_datasets
from case_runners.cases.imagenet.transforms import MEAN, STD
from case_runners.tasks.training import dist
from case_runners.tasks.training.case_api import RunContext, TrainingCase, schedule_steps, warmup_schedule


class ResNetClassifier(nn.Module):
    """transformers' ResNetForImageClassification returning plain logits."""

    def __init__(self, params: dict[str, Any]) -> None:
        super().__init__()
        from transformers import ResNetConfig, ResNetForImageClassification

        # num_labels: a keyword of every PreTrainedConfig, which ResNetConfig's typed signature leaves out
        config = ResNetConfig(  # type: ignore[call-arg]
            num_channels=3, embedding_size=int(params["embedding_size"]),
            hidden_sizes=[int(h) for h in params["hidden_sizes"]], depths=[int(d) for d in params["depths"]],
            layer_type="bottleneck", hidden_act="relu", num_labels=int(params["num_classes"]))
        self.net = ResNetForImageClassification(config)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(pixel_values=images).logits


class ResNet50Case(TrainingCase):
    target_metric = "acc1"

    def __init__(self, params: dict[str, Any], ctx: RunContext) -> None:
        self.p, self.ctx = params, ctx
        self.memory_format = torch.channels_last if params["channels_last"] else torch.contiguous_format
        self.mean = torch.tensor(MEAN, device=ctx.device).view(1, 3, 1, 1) * 255
        self.std = torch.tensor(STD, device=ctx.device).view(1, 3, 1, 1) * 255

    def build_model(self) -> nn.Module:
        # torch's overloads of Module.to leave out memory_format, which it takes
        return ResNetClassifier(self.p).to(memory_format=self.memory_format)  # type: ignore[call-overload]

    def build_data(self) -> tuple[Iterable, Iterable]:
        p, ctx = self.p, self.ctx
        train, val = build_datasets(ctx.data_dir, p)
        self.train_loader, val_loader = image_loaders(train, val, p, ctx)
        return self.train_loader, val_loader

    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any | None]:
        p = self.p
        lr = float(p["lr"])
        if int(p["lr_scaling_batch"]) > 0:
            lr *= int(p["batch_size"]) * self.ctx.world_size / int(p["lr_scaling_batch"])
        decay = [w for w in model.parameters() if w.ndim > 1]     # conv and linear weights
        no_decay = [w for w in model.parameters() if w.ndim <= 1]  # biases, batch-norm
        opt = torch.optim.SGD([{"params": decay, "weight_decay": float(p["weight_decay"])},
                               {"params": no_decay, "weight_decay": 0.0}], lr=lr, momentum=float(p["momentum"]))
        total = schedule_steps(p, len(self.train_loader))
        return opt, warmup_schedule(opt, int(p["warmup_steps"]), total, decay="cosine")

    def set_epoch(self, epoch: int) -> None:
        dist.set_sampler_epoch(self.train_loader, epoch)

    def to_device(self, batch: Any, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """uint8 images to the device, then normalised there (cheaper than on the host)."""
        images, labels = batch
        images = images.to(device, non_blocking=True).float().sub_(self.mean).div_(self.std)
        return images.contiguous(memory_format=self.memory_format), labels.to(device, non_blocking=True)

    def train_step(self, model: nn.Module, batch: Any) -> tuple[torch.Tensor, int]:
        images, labels = batch
        loss = F.cross_entropy(model(images), labels, label_smoothing=float(self.p["label_smoothing"]))
        return loss, labels.shape[0]

    def evaluate(self, model: nn.Module, eval_loader: Iterable) -> dict[str, float]:
        device = self.ctx.device
        hits = torch.zeros(3, dtype=torch.float64, device=device)  # top-1, top-5, samples
        for batch in eval_loader:
            images, labels = self.to_device(batch, device)
            logits = model(images).float()
            top = logits.topk(min(5, logits.shape[1]), dim=1).indices == labels[:, None]
            hits[0] += top[:, 0].sum()
            hits[1] += top.any(dim=1).sum()
            hits[2] += labels.shape[0]
        top1, top5, total = dist.all_reduce_sum(hits.tolist(), device)
        return {"acc1": 100.0 * top1 / max(total, 1), "acc5": 100.0 * top5 / max(total, 1)}

def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return ResNet50Case(params, ctx)
