"""digits_cnn: two 3x3 convolutions and two linear layers on 8x8 digits, SGD with momentum."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from case_runners.cases.digits_cnn.dataset import split_datasets
from case_runners.tasks.training import dist
from case_runners.tasks.training.case_api import RunContext, TrainingCase, schedule_steps, warmup_schedule


class DigitsCNN(nn.Module):
    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)     # 16x8x8
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)    # 32x8x8, max-pooled to 32x4x4
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


class DigitsCase(TrainingCase):
    target_metric = "accuracy"

    def __init__(self, params: dict[str, Any], ctx: RunContext) -> None:
        self.p, self.ctx = params, ctx

    def build_model(self) -> nn.Module:
        return DigitsCNN()

    def build_data(self) -> tuple[Iterable, Iterable]:
        p, ctx = self.p, self.ctx
        train, test = split_datasets(ctx.data_dir, bool(p["synthetic"]), int(p["seed"]))
        self.train_loader = dist.train_loader(train, int(p["batch_size"]), ctx.rank, ctx.world_size,
                                              seed=int(p["seed"]), num_workers=int(p["num_workers"]))
        return self.train_loader, dist.eval_loader(test, int(p["eval_batch_size"]), ctx.rank, ctx.world_size)

    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any | None]:
        p = self.p
        opt = torch.optim.SGD(model.parameters(), lr=float(p["lr"]), momentum=float(p["momentum"]),
                              weight_decay=float(p["weight_decay"]))
        total = schedule_steps(p, len(self.train_loader))
        return opt, warmup_schedule(opt, int(p["warmup_steps"]), total, decay="cosine")

    def set_epoch(self, epoch: int) -> None:
        dist.set_sampler_epoch(self.train_loader, epoch)

    def train_step(self, model: nn.Module, batch: Any) -> tuple[torch.Tensor, int]:
        images, labels = batch
        return F.cross_entropy(model(images), labels), labels.shape[0]

    def evaluate(self, model: nn.Module, eval_loader: Iterable) -> dict[str, float]:
        device = self.ctx.device
        sums = torch.zeros(3, dtype=torch.float64, device=device)  # correct, loss, samples
        for batch in eval_loader:
            images, labels = self.to_device(batch, device)
            logits = model(images).float()
            sums[0] += (logits.argmax(1) == labels).sum()
            sums[1] += F.cross_entropy(logits, labels, reduction="sum")
            sums[2] += labels.shape[0]
        correct, loss, total = dist.all_reduce_sum(sums.tolist(), device)
        return {"accuracy": correct / max(total, 1), "eval_loss": loss / max(total, 1)}

def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return DigitsCase(params, ctx)
