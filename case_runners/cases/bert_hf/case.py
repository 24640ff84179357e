"""bert_hf: transformers' BertForMaskedLM trained on, from bert-large-uncased, as FlagPerf's bert_hf: static
[MASK]s at a tenth of the positions, the loss over every position, accuracy at the masked ones."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import nn

from case_runners.cases.bert.case import TIED_KEYS, bert_config, read_state_dict
from case_runners.cases.bert_hf.data import weights_file
from case_runners.cases.bert_hf.dataset import build_datasets
from case_runners.cases.mlm import MASK_ID
from case_runners.tasks.training import dist
from case_runners.tasks.training.case_api import RunContext, TrainingCase


class BertHfCase(TrainingCase):
    target_metric = "mlm_accuracy"

    def __init__(self, params: dict[str, Any], ctx: RunContext) -> None:
        self.p, self.ctx = params, ctx

    def build_model(self) -> nn.Module:
        from transformers import BertForMaskedLM

        model = BertForMaskedLM(bert_config(self.p))
        on_meta = next(model.parameters()).is_meta  # the FLOPs count builds it on the meta device: no weights
        if not self.p["weight_dir"] or self.p["synthetic"] or on_meta:
            return model
        path = weights_file(self.ctx.data_dir, self.p["weight_dir"])
        if path is not None:  # the data check names a missing one first
            missing, _ = model.load_state_dict(read_state_dict(path), strict=False)
            missing = [k for k in missing if k not in TIED_KEYS]
            if missing:
                raise ValueError(f"{path}: not a BertForMaskedLM state dict for this config; missing {missing[:5]}")
        return model

    def build_data(self) -> tuple[Iterable, Iterable]:
        p, ctx = self.p, self.ctx
        train, held_out = build_datasets(ctx.data_dir, p)
        self.train_loader, eval_loader = dist.case_loaders(train, held_out, p, ctx, "training sequences",
                                                           eval_workers=True)
        return self.train_loader, eval_loader

    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any | None]:
        # FlagPerf's: AdamW on every parameter at torch's defaults (weight decay 0.01); its linear schedule is stepped
        # once an epoch over max_epoch x steps, so the rate stays at lr: no scheduler here.
        return torch.optim.AdamW(model.parameters(), lr=float(self.p["lr"]),
                                 weight_decay=float(self.p["weight_decay"])), None

    def set_epoch(self, epoch: int) -> None:
        dist.set_sampler_epoch(self.train_loader, epoch)

    def train_step(self, model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, int]:
        input_ids, labels = batch
        return model(input_ids=input_ids, labels=labels).loss, input_ids.shape[0]

    def evaluate(self, model: nn.Module, eval_loader: Iterable) -> dict[str, float]:
        """FlagPerf's accuracy (train/evaluator.py): the predictions at the [MASK] positions of the input that are
        the original token; here over all masked tokens of the held-out set (FlagPerf averages its batches')."""
        device = self.ctx.device
        correct = torch.zeros((), dtype=torch.float64, device=device)
        loss = torch.zeros((), dtype=torch.float64, device=device)
        count = torch.zeros((), dtype=torch.float64, device=device)
        batches = 0
        for input_ids, labels in eval_loader:
            input_ids, labels = input_ids.to(device, non_blocking=True), labels.to(device, non_blocking=True)
            out = model(input_ids=input_ids, labels=labels)
            masked = input_ids == MASK_ID
            correct += (out.logits.argmax(-1)[masked] == labels[masked]).sum()
            count += masked.sum()
            loss += out.loss.double()
            batches += 1
        total_correct, total_loss, total, total_batches = dist.all_reduce_sum(
            [correct.item(), loss.item(), count.item(), float(batches)], device)
        return {"mlm_accuracy": total_correct / max(total, 1), "eval_loss": total_loss / max(total_batches, 1)}


def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return BertHfCase(params, ctx)
