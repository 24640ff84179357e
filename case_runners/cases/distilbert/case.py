"""distilbert: DistilBertForSequenceClassification (transformers) fine-tuned on SST-2, as FlagPerf's distilbert:
AdamW, linear decay to 0 over max_epochs, accuracy on the validation set after each epoch."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from case_runners.cases.bert.case import read_state_dict
from case_runners.cases.bert.data import checkpoint_path
from case_runners.cases.distilbert.dataset import build_datasets
from case_runners.tasks.training import dist
from case_runners.tasks.training.case_api import RunContext, TrainingCase, schedule_steps, warmup_schedule

if TYPE_CHECKING:
    from transformers import DistilBertForSequenceClassification

HEAD = ("pre_classifier.", "classifier.")  # the classification head: new when fine-tuning from the MLM checkpoint
NO_DECAY = ("bias", "LayerNorm.weight", "layer_norm.weight")  # FlagPerf's optimizers/__init__.py


def distilbert(params: dict[str, Any]) -> DistilBertForSequenceClassification:
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    # num_labels: a keyword of every PreTrainedConfig, which the typed signature leaves out
    config = DistilBertConfig(vocab_size=int(params["vocab_size"]), dim=int(params["dim"]),
                              n_layers=int(params["n_layers"]), n_heads=int(params["n_heads"]),
                              hidden_dim=int(params["hidden_dim"]), dropout=float(params["dropout"]),
                              attention_dropout=float(params["attention_dropout"]),
                              seq_classif_dropout=float(params["seq_classif_dropout"]),
                              max_position_embeddings=max(512, int(params["seq_len"])),
                              num_labels=int(params["num_classes"]))  # type: ignore[call-arg]
    return DistilBertForSequenceClassification(config)


def load_checkpoint(model: nn.Module, path: str | Path) -> None:
    """distilbert-base-uncased's weights (FlagPerf's model/pytorch_model.bin: a DistilBertForMaskedLM state dict),
    or a fine-tuned DistilBertForSequenceClassification's; the head stays new where the file has none."""
    missing, _ = model.load_state_dict(read_state_dict(path), strict=False)
    missing = [k for k in missing if not k.startswith(HEAD)]
    if missing:
        raise ValueError(f"{path}: not a DistilBERT state dict for this config; missing {missing[:5]}")


def decay_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """FlagPerf's AdamW groups (its distilbert's and longformer's optimizers/__init__.py): weight decay on all but
    biases and LayerNorm weights."""
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    for name, w in model.named_parameters():
        (no_decay if any(n in name for n in NO_DECAY) else decay).append(w)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def adamw_linear(model: nn.Module, p: dict[str, Any],
                 steps_per_epoch: int) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """FlagPerf's distilbert and longformer optimizer: AdamW over decay_groups at lr, warmup_steps of linear warmup,
    then linear decay to 0 at the end of the run (max_steps, or max_epochs of steps_per_epoch)."""
    opt = torch.optim.AdamW(decay_groups(model, float(p["weight_decay"])), lr=float(p["lr"]))
    total = schedule_steps(p, steps_per_epoch)
    return opt, warmup_schedule(opt, int(p["warmup_steps"]), total, decay="linear")


class DistilBertCase(TrainingCase):
    target_metric = "acc"

    def __init__(self, params: dict[str, Any], ctx: RunContext) -> None:
        self.p, self.ctx = params, ctx

    def build_model(self) -> nn.Module:
        model = distilbert(self.p)
        on_meta = next(model.parameters()).is_meta  # the FLOPs count builds it on the meta device: no weights
        if self.p["init_checkpoint"] and not self.p["synthetic"] and not on_meta:
            load_checkpoint(model, checkpoint_path(self.ctx.data_dir, self.p["init_checkpoint"]))
        return model

    def build_data(self) -> tuple[Iterable, Iterable]:
        p, ctx = self.p, self.ctx
        train, held_out = build_datasets(ctx.data_dir, p)
        self.train_loader, eval_loader = dist.case_loaders(train, held_out, p, ctx, "training sentences",
                                                           drop_last=False)
        return self.train_loader, eval_loader

    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any | None]:
        return adamw_linear(model, self.p, len(self.train_loader))

    def set_epoch(self, epoch: int) -> None:
        dist.set_sampler_epoch(self.train_loader, epoch)

    def train_step(self, model: nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, int]:
        mask = batch["attention_mask"]
        # The FLOPs count (meta tensors) leaves the padding mask out: transformers reads its values to skip an all-ones
        # mask, and attention's FLOPs are the same with or without it (every position is computed either way).
        out = model(input_ids=batch["input_ids"], attention_mask=None if mask.is_meta else mask,
                    labels=batch["labels"])
        return out.loss, batch["input_ids"].shape[0]

    def evaluate(self, model: nn.Module, eval_loader: Iterable) -> dict[str, float]:
        device = self.ctx.device
        correct = torch.zeros((), dtype=torch.float64, device=device)
        loss = torch.zeros((), dtype=torch.float64, device=device)
        count = 0
        for batch in eval_loader:
            batch = self.to_device(batch, device)
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits.float()
            loss += nn.functional.cross_entropy(logits, batch["labels"], reduction="sum")
            correct += (logits.argmax(-1) == batch["labels"]).sum()
            count += len(batch["labels"])
        total_correct, total_loss, total = dist.all_reduce_sum([correct.item(), loss.item(), float(count)], device)
        return {"acc": total_correct / max(total, 1), "eval_loss": total_loss / max(total, 1)}


def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return DistilBertCase(params, ctx)
