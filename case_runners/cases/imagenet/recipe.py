"""The training recipes' pieces on tensors: mixup and cutmix with soft targets, an exponential moving average of the
weights, the optimizers and the learning-rate schedules (warmup, then cosine or step decay)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

from case_runners.plan.config.shared_params import IMAGE_OPTIMIZERS, LR_SCHEDULES


def soft_targets(labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    return nn.functional.one_hot(labels, num_classes).float()


def cutmix_box(height: int, width: int, lam: float) -> tuple[int, int, int, int]:
    """A box of area about (1 - lam) of the image, centred uniformly at random and clipped to it: (y0, y1, x0, x1)."""
    cut = math.sqrt(1.0 - lam)
    cy, cx = int(torch.randint(height, ()).item()), int(torch.randint(width, ()).item())
    h, w = int(height * cut), int(width * cut)
    return max(cy - h // 2, 0), min(cy + h // 2, height), max(cx - w // 2, 0), min(cx + w // 2, width)


def mix_batch(images: torch.Tensor, labels: torch.Tensor, num_classes: int, mixup_alpha: float,
              cutmix_alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(images, soft targets) of a batch mixed with itself rolled by one: mixup (a Beta(alpha, alpha) blend) or
    cutmix (a box of the rolled batch pasted in, the targets weighted by its area), one of the two drawn with
    probability 1/2 when both alphas are > 0; the batch as is, with one-hot targets, when both are 0."""
    targets = soft_targets(labels, num_classes).to(images.dtype if images.is_floating_point() else torch.float32)
    choices = [kind for kind, alpha in (("mixup", mixup_alpha), ("cutmix", cutmix_alpha)) if alpha > 0]
    if not choices:
        return images, targets
    kind = choices[int(torch.randint(len(choices), ()).item())]
    alpha = mixup_alpha if kind == "mixup" else cutmix_alpha
    lam = float(torch.distributions.Beta(alpha, alpha).sample())
    rolled = images.roll(1, dims=0)
    if kind == "mixup":
        images = images * lam + rolled * (1.0 - lam)
    else:
        y0, y1, x0, x1 = cutmix_box(images.shape[-2], images.shape[-1], lam)
        images = images.clone()
        images[..., y0:y1, x0:x1] = rolled[..., y0:y1, x0:x1]
        lam = 1.0 - (y1 - y0) * (x1 - x0) / (images.shape[-2] * images.shape[-1])
    return images, targets * lam + targets.roll(1, dims=0) * (1.0 - lam)


class ModelEma:
    """An exponential moving average of a model's floating-point parameters and buffers, updated every `every`
    optimizer steps as ema = decay * ema + (1 - decay) * weights (copied outright during the LR warmup, as
    torchvision's recipe does); `swapped_in` evaluates the model with the averaged weights."""

    def __init__(self, model: nn.Module, decay: float, every: int = 1) -> None:
        self.decay, self.every, self.steps = decay, max(1, every), 0
        self.tensors = list(self._tracked(model))
        self.shadow = [t.detach().clone() for t in self.tensors]

    @staticmethod
    def _tracked(model: nn.Module) -> Iterator[torch.Tensor]:
        for t in [*model.parameters(), *model.buffers()]:
            if t.is_floating_point():
                yield t

    @torch.no_grad()
    def update(self, warmup: bool = False) -> None:
        self.steps += 1
        if self.steps % self.every:
            return
        for avg, t in zip(self.shadow, self.tensors, strict=True):
            if warmup:
                avg.copy_(t.detach())
            else:
                avg.lerp_(t.detach(), 1.0 - self.decay)

    @contextmanager
    def swapped_in(self) -> Iterator[None]:
        """The averaged weights in the model for the block, its own ones back after."""
        with torch.no_grad():
            own = [t.detach().clone() for t in self.tensors]
            for avg, t in zip(self.shadow, self.tensors, strict=True):
                t.detach().copy_(avg)
        try:
            yield
        finally:
            with torch.no_grad():
                for saved, t in zip(own, self.tensors, strict=True):
                    t.detach().copy_(saved)


def build_optimizer(model: nn.Module, name: str, lr: float, momentum: float, weight_decay: float,
                    norm_weight_decay: float | None = None) -> torch.optim.Optimizer:
    """sgd (momentum), adamw or rmsprop (torchvision's recipe: alpha 0.9, eps 0.0316, momentum) over two groups:
    the weights of more than one dimension decayed by weight_decay, the others (biases, normalisation) by
    norm_weight_decay (None: weight_decay too)."""
    matrices = [w for w in model.parameters() if w.requires_grad and w.ndim > 1]
    vectors = [w for w in model.parameters() if w.requires_grad and w.ndim <= 1]
    groups = [{"params": matrices, "weight_decay": weight_decay},
              {"params": vectors, "weight_decay": weight_decay if norm_weight_decay is None else norm_weight_decay}]
    if name == "sgd":
        return torch.optim.SGD(groups, lr=lr, momentum=momentum)
    if name == "adamw":
        return torch.optim.AdamW(groups, lr=lr)
    if name == "rmsprop":
        return torch.optim.RMSprop(groups, lr=lr, alpha=0.9, eps=0.0316, momentum=momentum)
    raise ValueError(f"optimizer {name!r} is not one of {', '.join(IMAGE_OPTIMIZERS)}")


def lr_factor(step: int, *, total_steps: int, warmup_steps: int = 0, warmup_start: float = 0.0,
              schedule: str = "cosine", min_factor: float = 0.0, step_size: int = 1, gamma: float = 0.1) -> float:
    """The LR multiplier after `step` optimizer steps: linear warmup from warmup_start to 1 over warmup_steps, then
    cosine (to min_factor at total_steps), step (times gamma every step_size steps) or constant."""
    if step < warmup_steps:
        return warmup_start + (1.0 - warmup_start) * step / warmup_steps
    after = step - warmup_steps
    if schedule == "step":
        return gamma ** (after // max(1, step_size))
    if schedule == "cosine" and total_steps > warmup_steps:
        progress = min(1.0, after / (total_steps - warmup_steps))
        return min_factor + (1.0 - min_factor) * 0.5 * (1.0 + math.cos(math.pi * progress))
    if schedule not in LR_SCHEDULES:
        raise ValueError(f"lr schedule {schedule!r} is not one of {', '.join(LR_SCHEDULES)}")
    return 1.0


def lr_schedule(optimizer: torch.optim.Optimizer, **kwargs: float | int | str) -> torch.optim.lr_scheduler.LambdaLR:
    """A LambdaLR stepped once per optimizer step with lr_factor's keyword arguments."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(step, **kwargs))  # type: ignore[arg-type]
