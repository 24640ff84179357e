"""longformer: transformers' LongformerForMaskedLM trained from random weights, as FlagPerf's longformer: 15 % of
the tokens masked BERT's way, AdamW, linear decay, masked-token accuracy after each epoch."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from case_runners.cases.distilbert.case import adamw_linear
from case_runners.cases.longformer.dataset import MaskingCollator, build_datasets
from case_runners.cases.mlm import IGNORE
from case_runners.tasks.training import dist
from case_runners.tasks.training.case_api import RunContext, TrainingCase

if TYPE_CHECKING:
    from transformers import LongformerForMaskedLM


def longformer(params: dict[str, Any]) -> LongformerForMaskedLM:
    from transformers import LongformerConfig, LongformerForMaskedLM

    # longformer-base-4096's config.json (RoBERTa's special ids: <s> 0, <pad> 1, </s> 2), its sizes from the params.
    config = LongformerConfig(vocab_size=int(params["vocab_size"]), hidden_size=int(params["hidden_size"]),
                              num_hidden_layers=int(params["num_layers"]),
                              num_attention_heads=int(params["num_heads"]),
                              intermediate_size=int(params["intermediate_size"]),
                              attention_window=int(params["attention_window"]),
                              max_position_embeddings=max(4098, int(params["seq_len"]) + 2), type_vocab_size=1,
                              pad_token_id=1, bos_token_id=0, eos_token_id=2, sep_token_id=2)
    return LongformerForMaskedLM(config)


class _NoGlobalTokens(TorchFunctionMode):
    """The FLOPs count (meta tensors): Longformer asks whether any token has global attention with .item(), which a
    meta tensor cannot answer; none has (FlagPerf gives no global_attention_mask), so the answer is False."""

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if func is torch.Tensor.item and args[0].is_meta:
            return False
        return func(*args, **(kwargs or {}))


class LongformerCase(TrainingCase):
    target_metric = "mlm_accuracy"

    def __init__(self, params: dict[str, Any], ctx: RunContext) -> None:
        self.p, self.ctx = params, ctx

    def build_model(self) -> nn.Module:
        return longformer(self.p)

    def build_data(self) -> tuple[Iterable, Iterable]:
        p, ctx = self.p, self.ctx
        train, held_out = build_datasets(ctx.data_dir, p)
        self.train_loader, eval_loader = dist.case_loaders(train, held_out, p, ctx, "training sequences",
                                                           drop_last=False, collate_fn=MaskingCollator(p))
        return self.train_loader, eval_loader

    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any | None]:
        return adamw_linear(model, self.p, len(self.train_loader))

    def set_epoch(self, epoch: int) -> None:
        dist.set_sampler_epoch(self.train_loader, epoch)

    def train_step(self, model: nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, int]:
        ids = batch["input_ids"]
        with _NoGlobalTokens() if ids.is_meta else nullcontext():
            out = model(input_ids=ids, attention_mask=batch["attention_mask"], labels=batch["labels"])
        return out.loss, ids.shape[0]

    def evaluate(self, model: nn.Module, eval_loader: Iterable) -> dict[str, float]:
        """FlagPerf's accuracy (train/evaluator.py): the predictions at the masked tokens (labels not IGNORE) that
        are the original token, over all of them."""
        device = self.ctx.device
        correct = torch.zeros((), dtype=torch.float64, device=device)
        loss = torch.zeros((), dtype=torch.float64, device=device)
        count = torch.zeros((), dtype=torch.float64, device=device)
        for input_ids, attention, labels in eval_loader:
            input_ids, attention, labels = (t.to(device, non_blocking=True) for t in (input_ids, attention, labels))
            logits = model(input_ids=input_ids, attention_mask=attention).logits.float()
            used = labels != IGNORE
            loss += nn.functional.cross_entropy(logits[used], labels[used], reduction="sum")
            correct += (logits.argmax(-1)[used] == labels[used]).sum()
            count += used.sum()
        total_correct, total_loss, total = dist.all_reduce_sum([correct.item(), loss.item(), count.item()], device)
        return {"mlm_accuracy": total_correct / max(total, 1), "eval_loss": total_loss / max(total, 1)}


def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return LongformerCase(params, ctx)
