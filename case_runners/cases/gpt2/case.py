"""gpt2: Megatron-GPT2 345M, FlagPerf's gpt2, as transformers' GPT2LMHeadModel; causal-LM pretraining on a Megatron
indexed dataset, evaluated by LAMBADA last-token accuracy (dataset.py says exactly what is scored)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn import functional as F

from case_runners.cases.gpt2.dataset import build_datasets
from case_runners.cases.imagenet.recipe import build_optimizer, lr_schedule
from case_runners.tasks.training import dist
from case_runners.tasks.training.case_api import RunContext, TrainingCase, schedule_steps

if TYPE_CHECKING:
    from transformers import GPT2Config


def gpt2_config(params: dict[str, Any]) -> GPT2Config:
    """Megatron's GPT: learned positions, pre-LayerNorm blocks, GELU (tanh form, as Megatron's fused bias-GELU),
    the output layer tied to the word embeddings."""
    from transformers import GPT2Config

    return GPT2Config(vocab_size=int(params["vocab_size"]), n_positions=int(params["seq_len"]),
                      n_embd=int(params["hidden_size"]), n_layer=int(params["num_layers"]),
                      n_head=int(params["num_heads"]), n_inner=int(params["ffn_hidden_size"]),
                      activation_function="gelu_new", resid_pdrop=float(params["hidden_dropout"]),
                      embd_pdrop=float(params["hidden_dropout"]), attn_pdrop=float(params["attention_dropout"]),
                      layer_norm_epsilon=float(params["layernorm_epsilon"]),
                      initializer_range=float(params["init_method_std"]), tie_word_embeddings=True,
                      bos_token_id=None, eos_token_id=None)


class GPT2Pretraining(nn.Module):
    """GPT2LMHeadModel whose forward gives every position's logits, or with `positions` (batch,) only the logits
    after those positions (the LAMBADA evaluation scores one token a passage)."""

    def __init__(self, config: GPT2Config) -> None:
        super().__init__()
        from transformers import GPT2LMHeadModel

        self.lm = GPT2LMHeadModel(config)

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        hidden = self.lm.transformer(input_ids=input_ids).last_hidden_state
        if positions is not None:
            hidden = hidden[torch.arange(len(positions), device=hidden.device), positions]
        return self.lm.lm_head(hidden)


class GPT2Case(TrainingCase):
    target_metric = "lambada_acc"

    def __init__(self, params: dict[str, Any], ctx: RunContext) -> None:
        self.p, self.ctx = params, ctx
        self.max_grad_norm = float(params["max_grad_norm"])

    def build_model(self) -> nn.Module:
        return GPT2Pretraining(gpt2_config(self.p))

    def build_data(self) -> tuple[Iterable, Iterable]:
        p, ctx = self.p, self.ctx
        train, passages = build_datasets(ctx.data_dir, p)
        self.train_loader, eval_loader = dist.case_loaders(train, passages, p, ctx, "training sequences")
        return self.train_loader, eval_loader

    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any | None]:
        """Megatron's Adam (decoupled weight decay, none on biases and LayerNorm weights); linear warmup over
        warmup_fraction of the run, then cosine to lr_min at its end (Megatron's OptimizerParamScheduler)."""
        p = self.p
        lr = float(p["lr"])
        opt = build_optimizer(model, "adamw", lr, 0.0, float(p["weight_decay"]), 0.0)
        for group in opt.param_groups:
            group["betas"], group["eps"] = (float(p["adam_beta1"]), float(p["adam_beta2"])), float(p["adam_eps"])
        total = schedule_steps(p, len(self.train_loader))
        return opt, lr_schedule(opt, total_steps=total, warmup_steps=round(float(p["warmup_fraction"]) * total),
                                schedule="cosine", min_factor=float(p["lr_min"]) / lr)

    def set_epoch(self, epoch: int) -> None:
        dist.set_sampler_epoch(self.train_loader, epoch)

    def train_step(self, model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, int]:
        input_ids, labels = batch
        logits = model(input_ids)
        return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten()), input_ids.shape[0]

    def evaluate(self, model: nn.Module, eval_loader: Iterable) -> dict[str, float]:
        device = self.ctx.device
        correct = torch.zeros((), dtype=torch.float64, device=device)
        loss = torch.zeros((), dtype=torch.float64, device=device)
        count = 0
        for batch in eval_loader:
            input_ids, positions, labels = self.to_device(batch, device)
            logits = model(input_ids, positions).float()
            correct += (logits.argmax(-1) == labels).sum()
            loss += F.cross_entropy(logits, labels, reduction="sum")
            count += len(labels)
        total_correct, total_loss, total = dist.all_reduce_sum([correct.item(), loss.item(), float(count)], device)
        return {"lambada_acc": total_correct / max(total, 1), "eval_last_token_loss": total_loss / max(total, 1)}


def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return GPT2Case(params, ctx)
