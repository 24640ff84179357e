"""ImageClassifierCase: the TrainingCase of an ImageNet classifier, its recipe read from the case's params. A case
subclasses it with its model (build_network) and exposes build_case; its config.yaml declares the params below.

Params (besides the trainer's: batch_size, eval_batch_size, seed, synthetic, max_steps, max_epochs, ...):
  image_size, crop_scale_min (the random-resized crop's smallest share of the area), hflip (the training images'
  horizontal flip probability: 0.5 in every recipe, 0 for images a mirror changes, as digits), eval_image_size
  (0: image_size), eval_resize (0: eval size x 256/224), num_classes, synthetic_samples, num_workers, channels_last;
  optimizer (sgd, adamw, rmsprop), lr (for a global batch of lr_scaling_batch, scaled linearly; 0: as is),
  lr_scaling_batch, momentum, weight_decay, norm_weight_decay (null: weight_decay; for biases and normalisation);
  lr_schedule (cosine, step, constant), warmup_epochs, warmup_start (the warmup's first LR factor), lr_min,
  lr_step_epochs and lr_gamma (step: times lr_gamma every lr_step_epochs);
  label_smoothing, mixup_alpha and cutmix_alpha (0: off), auto_augment (none, ra) and ra_magnitude (RandAugment, 2
  operations), ema_decay (0: off; else the averaged weights are the ones evaluated) and ema_steps, max_grad_norm
  (0: no clipping).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset

from case_runners.cases.imagenet.dataset import build_datasets
from case_runners.cases.imagenet.recipe import ModelEma, build_optimizer, lr_schedule, mix_batch
from case_runners.cases.imagenet.transforms import MEAN, STD, RandAugment, Transform, eval_transform, train_transform
from case_runners.tasks.training import dist
from case_runners.tasks.training.case_api import RunContext, TrainingCase, schedule_steps


class Logits(nn.Module):
    """A transformers *ForImageClassification model returning plain logits."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(pixel_values=images).logits


def top_hits(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(top-1 hits, top-5 hits) of a batch, as counts."""
    top = logits.topk(min(5, logits.shape[1]), dim=1).indices == labels[:, None]
    return top[:, 0].sum(), top.any(dim=1).sum()


def image_loaders(train: Dataset, val: Dataset, p: dict[str, Any], ctx: RunContext) -> tuple[DataLoader, DataLoader]:
    """(train loader, seeded and sharded by rank, whole batches only; eval loader) of an image case's datasets."""
    return dist.case_loaders(train, val, p, ctx, "training images per epoch", eval_workers=True)


class ImageClassifierCase(TrainingCase):
    target_metric = "acc1"

    def __init__(self, params: dict[str, Any], ctx: RunContext) -> None:
        self.p, self.ctx = params, ctx
        self.max_grad_norm = float(params["max_grad_norm"])
        self.memory_format = torch.channels_last if params["channels_last"] else torch.contiguous_format
        self.mean = torch.tensor(MEAN, device=ctx.device).view(1, 3, 1, 1) * 255
        self.std = torch.tensor(STD, device=ctx.device).view(1, 3, 1, 1) * 255
        self.ema: ModelEma | None = None
        self.steps = self.warmup_steps = 0

    @abstractmethod
    def build_network(self) -> nn.Module:
        """The model: normalised float NCHW images of image_size (eval_image_size in evaluation) to logits over
        num_classes."""

    @property
    def eval_size(self) -> int:
        return int(self.p["eval_image_size"]) or int(self.p["image_size"])

    def build_model(self) -> nn.Module:
        # torch's overloads of Module.to leave out memory_format, which it takes
        return self.build_network().to(memory_format=self.memory_format)  # type: ignore[call-overload]

    def train_transforms(self) -> Transform:
        """The training images' transform: random resized crop of image_size (at least crop_scale_min of the area)
        and flip (with probability hflip), then RandAugment when auto_augment is ra. A recipe of other transforms
        overrides it."""
        p = self.p
        augment = RandAugment(magnitude=int(p["ra_magnitude"])) if p["auto_augment"] == "ra" else None
        return train_transform(int(p["image_size"]), augment, float(p["crop_scale_min"]), float(p["hflip"]))

    def eval_transforms(self) -> Transform:
        """The eval images' transform: resize to eval_resize, centre crop of the eval size."""
        return eval_transform(self.eval_size, int(self.p["eval_resize"]))

    def build_data(self) -> tuple[Iterable, Iterable]:
        p, ctx = self.p, self.ctx
        train, val = build_datasets(ctx.data_dir, p, self.train_transforms(), self.eval_transforms(),
                                    eval_size=self.eval_size)
        self.train_loader, val_loader = image_loaders(train, val, p, ctx)
        return self.train_loader, val_loader

    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any | None]:
        p = self.p
        lr = float(p["lr"])
        if int(p["lr_scaling_batch"]) > 0:
            lr *= int(p["batch_size"]) * self.ctx.world_size / int(p["lr_scaling_batch"])
        norm_decay = p["norm_weight_decay"]
        opt = build_optimizer(model, str(p["optimizer"]), lr, float(p["momentum"]), float(p["weight_decay"]),
                              None if norm_decay is None else float(norm_decay))
        epoch = len(self.train_loader)
        self.warmup_steps = round(float(p["warmup_epochs"]) * epoch)
        total = schedule_steps(p, epoch)
        schedule = lr_schedule(opt, total_steps=total, warmup_steps=self.warmup_steps,
                               warmup_start=float(p["warmup_start"]), schedule=str(p["lr_schedule"]),
                               min_factor=float(p["lr_min"]) / lr if lr > 0 else 0.0,
                               step_size=max(1, round(float(p["lr_step_epochs"]) * epoch)),
                               gamma=float(p["lr_gamma"]))
        return opt, schedule

    def set_epoch(self, epoch: int) -> None:
        dist.set_sampler_epoch(self.train_loader, epoch)

    def to_device(self, batch: Any, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """uint8 images to the device, then normalised there (cheaper than on the host)."""
        images, labels = batch
        images = images.to(device, non_blocking=True).float().sub_(self.mean).div_(self.std)
        return images.contiguous(memory_format=self.memory_format), labels.to(device, non_blocking=True)

    def train_step(self, model: nn.Module, batch: Any) -> tuple[torch.Tensor, int]:
        p = self.p
        images, labels = batch
        targets: torch.Tensor = labels
        if float(p["mixup_alpha"]) > 0 or float(p["cutmix_alpha"]) > 0:
            images, targets = mix_batch(images, labels, int(p["num_classes"]), float(p["mixup_alpha"]),
                                        float(p["cutmix_alpha"]))
        loss = F.cross_entropy(model(images), targets, label_smoothing=float(p["label_smoothing"]))
        return loss, labels.shape[0]

    def after_step(self, model: nn.Module) -> None:
        """Update the EMA of the weights (ema_decay > 0), created from the model the trainer trains."""
        self.steps += 1
        if float(self.p["ema_decay"]) <= 0:
            return
        if self.ema is None:
            self.ema = ModelEma(model, float(self.p["ema_decay"]), int(self.p["ema_steps"]))
        self.ema.update(warmup=self.steps <= self.warmup_steps)

    def evaluate(self, model: nn.Module, eval_loader: Iterable) -> dict[str, float]:
        """Top-1 and top-5 accuracy (%) over the eval set, reduced over the ranks; of the EMA weights when there
        are."""
        if self.ema is None:
            return self._accuracy(model, eval_loader)
        with self.ema.swapped_in():
            return self._accuracy(model, eval_loader)

    def _accuracy(self, model: nn.Module, eval_loader: Iterable) -> dict[str, float]:
        device = self.ctx.device
        hits = torch.zeros(3, dtype=torch.float64, device=device)  # top-1, top-5, samples
        for batch in eval_loader:
            images, labels = self.to_device(batch, device)
            top1, top5 = top_hits(model(images).float(), labels)
            hits[0] += top1
            hits[1] += top5
            hits[2] += labels.shape[0]
        top1_sum, top5_sum, total = dist.all_reduce_sum(hits.tolist(), device)
        return {"acc1": 100.0 * top1_sum / max(total, 1), "acc5": 100.0 * top5_sum / max(total, 1)}
