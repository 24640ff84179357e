"""bert: BertForMaskedLM (transformers) pretraining; the MLM head runs on masked positions only."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn import functional as F

from case_runners.cases.bert.data import checkpoint_path
from case_runners.cases.bert.dataset import MaskingCollator, build_datasets
from case_runners.cases.mlm import IGNORE
from case_runners.tasks.training import dist
from case_runners.tasks.training.case_api import RunContext, TrainingCase, schedule_steps, warmup_schedule

if TYPE_CHECKING:
    from transformers import BertConfig

TIED_KEYS = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}


def bert_config(params: dict[str, Any]) -> BertConfig:
    from transformers import BertConfig

    return BertConfig(vocab_size=int(params["vocab_size"]), hidden_size=int(params["hidden_size"]),
                      num_hidden_layers=int(params["num_layers"]), num_attention_heads=int(params["num_heads"]),
                      intermediate_size=int(params["intermediate_size"]),
                      hidden_dropout_prob=float(params["hidden_dropout"]),
                      attention_probs_dropout_prob=float(params["attention_dropout"]),
                      max_position_embeddings=max(512, int(params["seq_len"])), pad_token_id=0)


class BertPretraining(nn.Module):
    """BertForMaskedLM whose prediction head sees only the gathered masked positions (as MLPerf)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        from transformers import BertForMaskedLM

        self.mlm = BertForMaskedLM(config)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, positions: torch.Tensor,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        hidden = self.mlm.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=token_type_ids).last_hidden_state
        picked = hidden.gather(1, positions.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
        return self.mlm.cls(picked)  # (batch, max_predictions, vocab)


def read_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """A state dict from .safetensors, or torch.save's .pt/.bin (tensors only), on the CPU."""
    if str(path).endswith(".safetensors"):
        from safetensors.torch import load_file

        return load_file(str(path))
    return torch.load(path, map_location="cpu", weights_only=True)


def load_checkpoint(model: BertPretraining, path: str | Path) -> None:
    missing, _ = model.mlm.load_state_dict(read_state_dict(path), strict=False)
    missing = [k for k in missing if k not in TIED_KEYS]
    if missing:
        raise ValueError(f"{path}: not a BertForMaskedLM state dict for this config; missing {missing[:5]}")


class BertCase(TrainingCase):
    target_metric = "mlm_accuracy"

    def __init__(self, params: dict[str, Any], ctx: RunContext) -> None:
        self.p, self.ctx = params, ctx
        self.max_grad_norm = float(params["max_grad_norm"])

    def build_model(self) -> nn.Module:
        model = BertPretraining(bert_config(self.p))
        if self.p["init_checkpoint"]:
            load_checkpoint(model, checkpoint_path(self.ctx.data_dir, self.p["init_checkpoint"]))
        return model

    def build_data(self) -> tuple[Iterable, Iterable]:
        p, ctx = self.p, self.ctx
        train, held_out = build_datasets(ctx.data_dir, p)
        self.train_loader, eval_loader = dist.case_loaders(train, held_out, p, ctx, "training sequences",
                                                           collate_fn=MaskingCollator(p))
        return self.train_loader, eval_loader

    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any | None]:
        p = self.p
        decay: list[nn.Parameter] = []
        no_decay: list[nn.Parameter] = []
        for name, w in model.named_parameters():
            (no_decay if w.ndim <= 1 or "LayerNorm" in name else decay).append(w)
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": float(p["weight_decay"])},
                                 {"params": no_decay, "weight_decay": 0.0}], lr=float(p["lr"]),
                                betas=(float(p["adam_beta1"]), float(p["adam_beta2"])), eps=float(p["adam_eps"]))
        total = schedule_steps(p, len(self.train_loader))
        return opt, warmup_schedule(opt, int(p["warmup_steps"]), total, decay="linear")

    def set_epoch(self, epoch: int) -> None:
        dist.set_sampler_epoch(self.train_loader, epoch)

    def train_step(self, model: nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, int]:
        logits = model(batch["input_ids"], batch["attention_mask"], batch["positions"], batch.get("token_type_ids"))
        loss = F.cross_entropy(logits.flatten(0, 1).float(), batch["labels"].flatten(), ignore_index=IGNORE)
        return loss, batch["input_ids"].shape[0]

    def evaluate(self, model: nn.Module, eval_loader: Iterable) -> dict[str, float]:
        device = self.ctx.device
        correct = torch.zeros((), dtype=torch.float64, device=device)
        loss = torch.zeros((), dtype=torch.float64, device=device)
        count = torch.zeros((), dtype=torch.float64, device=device)
        for batch in eval_loader:
            input_ids, attention, positions, labels, *segments = self.to_device(batch, device)  # EVAL_FIELDS
            logits = model(input_ids, attention, positions, *segments).float().flatten(0, 1)
            labels = labels.flatten()
            used = labels != IGNORE
            loss += F.cross_entropy(logits, labels, ignore_index=IGNORE, reduction="sum")
            correct += ((logits.argmax(1) == labels) & used).sum()
            count += used.sum()
        total_correct, total_loss, total = dist.all_reduce_sum([correct.item(), loss.item(), count.item()], device)
        return {"mlm_accuracy": total_correct / max(total, 1), "eval_mlm_loss": total_loss / max(total, 1)}


def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return BertCase(params, ctx)
