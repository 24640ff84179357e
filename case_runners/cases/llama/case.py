"""llama: LlamaForCausalLM (transformers, model.py) pretrained on a flat token file (dataset.py) to a held-out loss.

A sample is one token: train_step returns the batch's tokens, so the trainer's samples/s are tokens/s and the
case's flops_per_sample (shapes.flops_per_token, the PaLM convention) is per token.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import Subset

from case_runners.cases import case_dir
from case_runners.cases.llama import model as llama_model
from case_runners.cases.llama.dataset import build_datasets, held_out_loader, train_loader, unigram_entropy
from case_runners.cases.llama.shapes import ROUTER_AUX_LOSS, shape_of
from case_runners.plan.config.yaml_io import load_mapping
from case_runners.tasks.training import dist
from case_runners.tasks.training.case_api import RunContext, TrainingCase, warmup_schedule

if TYPE_CHECKING:
    from transformers import PreTrainedModel

TARGET_METRIC = "held_out_loss"


def case_target() -> float:
    """The target value of the case's config.yaml (one definition: the plan resolves the same file)."""
    path = case_dir("llama") / "config.yaml"
    return float(load_mapping(path, path.parent)["target"]["value"])


class LlamaCase(TrainingCase):
    target_metric = TARGET_METRIC

    def __init__(self, params: dict[str, Any], ctx: RunContext) -> None:
        self.params, self.ctx = params, ctx
        # vocab_size 0 means the shape's own: the data is checked against the effective one.
        self.p = {**params, "vocab_size": shape_of(params).vocab}
        self.max_grad_norm = float(params["max_grad_norm"])
        self.entropy = math.nan

    def build_model(self) -> nn.Module:
        return llama_model.build_model(self.params)

    def build_data(self) -> tuple[Iterable, Iterable]:
        p, ctx = self.p, self.ctx
        seq_len = int(p["seq_len"])
        train, held_out = build_datasets(ctx.data_dir, p)
        # The first ones, the same every round; a multiple of the ranks, so that every rank runs as many forwards
        # (under FSDP each forward is a collective of all ranks). The ranks of a model replica (tensor parallelism)
        # read the same data: the data-parallel rank's share.
        evaluated = min(len(held_out), int(p["eval_samples"])) // ctx.world_size * ctx.world_size
        if evaluated == 0:
            raise ValueError(f"the held-out split has fewer sequences of seq_len {seq_len} + 1 tokens "
                             f"({len(held_out)}) than ranks ({ctx.world_size})")
        evaluated_set = Subset(held_out, range(evaluated))
        tokens = held_out.tokens[1:evaluated * seq_len + 1]  # the labels evaluated
        self.entropy = math.log(int(p["vocab_size"])) if p.get("synthetic") else unigram_entropy(tokens)
        if ctx.rank == 0:
            print(f"held-out unigram entropy {self.entropy:.3f} nats/token (a model knowing only token "
                  f"frequencies); target: held-out loss <= {case_target()}", flush=True)
        workers, pin = int(p["num_workers"]), ctx.pin_memory
        self.train_loader = train_loader(train, int(p["batch_size"]), ctx.data_rank, ctx.data_ranks,
                                         seed=int(p["seed"]), num_workers=workers, pin_memory=pin)
        if len(self.train_loader) == 0:
            raise ValueError(f"{len(train)} training sequences of seq_len {seq_len} are fewer than one global "
                             f"batch ({p['batch_size']} x {ctx.data_ranks} data-parallel ranks)")
        return self.train_loader, held_out_loader(evaluated_set, int(p["eval_batch_size"]), ctx.data_rank,
                                                  ctx.data_ranks, num_workers=workers, pin_memory=pin)

    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any | None]:
        """AdamW, weight decay on the matrices only (not the norms); linear warmup then cosine to lr_min at
        max_steps."""
        p = self.p
        decay = [w for w in model.parameters() if w.requires_grad and w.ndim >= 2]
        no_decay = [w for w in model.parameters() if w.requires_grad and w.ndim < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": float(p["weight_decay"])},
                                 {"params": no_decay, "weight_decay": 0.0}], lr=float(p["lr"]),
                                betas=(float(p["adam_beta1"]), float(p["adam_beta2"])), eps=float(p["adam_eps"]))
        return opt, warmup_schedule(opt, int(p["warmup_steps"]), int(p["max_steps"]), decay="cosine",
                                    min_factor=float(p["lr_min"]) / float(p["lr"]))

    def set_epoch(self, epoch: int) -> None:
        dist.set_sampler_epoch(self.train_loader, epoch)

    def train_step(self, model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, int]:
        input_ids, labels = batch  # labels are shifted already (dataset.py)
        coef = float(self.params.get(ROUTER_AUX_LOSS, 0.0))
        if coef:  # a mixture of experts' load-balancing loss (plan_problems: MoE shapes only), as transformers adds it
            out = model(input_ids=input_ids, output_router_logits=True)
            loss = F.cross_entropy(out.logits.float().flatten(0, 1), labels.flatten())
            return loss + coef * out.aux_loss.float(), labels.numel()
        logits = model(input_ids=input_ids).logits
        loss = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten())
        return loss, labels.numel()

    def evaluate(self, model: nn.Module, eval_loader: Iterable) -> dict[str, float]:
        device = self.ctx.device
        loss = torch.zeros((), dtype=torch.float64, device=device)
        count = 0
        for batch in eval_loader:
            input_ids, labels = self.to_device(batch, device)
            logits = model(input_ids=input_ids).logits
            loss += F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), reduction="sum")
            count += labels.numel()
        total_loss, total = dist.all_reduce_sum([loss.item(), count], device)
        mean = total_loss / max(total, 1)
        return {TARGET_METRIC: mean, "perplexity": math.exp(min(mean, 700.0)), "unigram_entropy": self.entropy}

    # -- the trainer's optional hooks (tasks/training/case_api.py) -------------------------------------

    def shard_units(self, model: nn.Module) -> list[nn.Module]:
        """FSDP's units: the decoder layers (the trainer shards each, then the root)."""
        return llama_model.decoder_layers(model)

    def enable_activation_checkpointing(self, model: nn.Module) -> None:
        """Recompute each decoder layer's activations in the backward pass (transformers' activation checkpointing,
        formerly gradient_checkpointing_enable; non-reentrant: works under FSDP2)."""
        pretrained = cast("PreTrainedModel", model)
        if hasattr(pretrained, "activation_checkpointing_enable"):
            pretrained.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:  # transformers before the rename
            pretrained.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})

    def save_checkpoint(self, state_dict: dict[str, torch.Tensor], directory: Path) -> None:
        """model.safetensors + model.json (model.py's checkpoint directory) from the full CPU state dict."""
        llama_model.save_state_dict(state_dict, directory, self.params)


def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return LlamaCase(params, ctx)
