"""wav2vec2: wav2vec 2.0 base pretraining, FlagPerf's wav2vec2 (NVIDIA's fairseq-based recipe), as transformers'
Wav2Vec2ForPreTraining: masked time steps, each to be told from num_negatives distractors among the quantised
latents; evaluated by FlagPerf's contrastive accuracy (evaluate's docstring)."""

from __future__ import annotations

from collections.abc import Iterable, Sized
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader

from case_runners.cases.imagenet.recipe import build_optimizer
from case_runners.cases.wav2vec2.dataset import (
    LengthGroupedBatches,
    MaskingCollator,
    build_datasets,
    collate_args,
)
from case_runners.tasks.training import dist
from case_runners.tasks.training.case_api import RunContext, TrainingCase, schedule_steps, warmup_schedule

if TYPE_CHECKING:
    from transformers import Wav2Vec2Config

IGNORE = -100  # the contrastive target of a time step that is not masked


def wav2vec2_config(params: dict[str, Any]) -> Wav2Vec2Config:
    """wav2vec 2.0 base as FlagPerf's model_config.py: 7 unbiased convolutions (group norm on the first), 12
    post-LayerNorm blocks, a convolutional position embedding, 2 x 320 codevectors projected to 256."""
    from transformers import Wav2Vec2Config

    hidden = int(params["hidden_size"])
    return Wav2Vec2Config(
        hidden_size=hidden, num_hidden_layers=int(params["num_layers"]),
        num_attention_heads=int(params["num_heads"]), intermediate_size=int(params["intermediate_size"]),
        conv_dim=[int(params["conv_channels"])] * 7, conv_stride=[5, 2, 2, 2, 2, 2, 2],
        conv_kernel=[10, 3, 3, 3, 3, 2, 2],
        conv_bias=False, feat_extract_norm="group", do_stable_layer_norm=False,
        num_conv_pos_embeddings=int(params["conv_pos"]), num_conv_pos_embedding_groups=int(params["conv_pos_groups"]),
        hidden_dropout=float(params["dropout"]), attention_dropout=float(params["attention_dropout"]),
        activation_dropout=0.0, feat_proj_dropout=float(params["dropout_input"]),
        feat_quantizer_dropout=float(params["dropout_features"]), layerdrop=0.0,
        mask_time_prob=float(params["mask_prob"]), mask_time_length=int(params["mask_length"]),
        num_negatives=int(params["num_negatives"]), codevector_dim=int(params["final_dim"]),
        proj_codevector_dim=int(params["final_dim"]), num_codevectors_per_group=int(params["latent_vars"]),
        num_codevector_groups=int(params["latent_groups"]),
        contrastive_logits_temperature=float(params["logit_temp"]),
        diversity_loss_weight=float(params["diversity_loss_weight"]))


class Wav2Vec2Pretraining(nn.Module):
    """Wav2Vec2ForPreTraining returning (loss, correct, count) summed over the batch's masked time steps: the
    contrastive loss plus diversity_loss_weight x the codebook diversity loss (transformers' loss), and how many
    masked steps rank their true latent first (FlagPerf's accuracy). The loss is written out, on transformers'
    compute_contrastive_logits, because the accuracy needs the logits the model's forward keeps to itself, and
    without its data-dependent branch, so that the FLOPs counter can run it on the meta device."""

    def __init__(self, config: Wav2Vec2Config) -> None:
        super().__init__()
        from transformers import Wav2Vec2ForPreTraining

        self.w2v = Wav2Vec2ForPreTraining(config)
        quantizer = self.w2v.quantizer  # its codevectors come from torch.FloatTensor, which ignores torch.device(...)
        quantizer.codevectors = nn.Parameter(quantizer.codevectors.data.to(quantizer.weight_proj.weight.device))

    def forward(self, input_values: torch.Tensor, mask_time_indices: torch.Tensor,
                sampled_negative_indices: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        config = self.w2v.config
        out = self.w2v(input_values, mask_time_indices=mask_time_indices)
        quantized, predicted = out.projected_quantized_states, out.projected_states
        batch, frames, width = quantized.shape
        negatives = quantized.reshape(-1, width)[sampled_negative_indices.reshape(-1)]
        negatives = negatives.view(batch, frames, -1, width).permute(2, 0, 1, 3)
        logits = self.w2v.compute_contrastive_logits(quantized[None], negatives, predicted,
                                                     config.contrastive_logits_temperature)
        same = (quantized[None] == negatives).all(-1)  # a distractor equal to the latent cannot count against it
        logits = torch.cat([logits[:1], logits[1:].masked_fill(same, float("-inf"))]).float()
        logits = logits.permute(1, 2, 0).reshape(batch * frames, -1)  # (time steps, 1 + num_negatives)
        masked = mask_time_indices.reshape(-1)
        target = torch.where(masked, 0, IGNORE)
        contrastive = F.cross_entropy(logits, target, ignore_index=IGNORE, reduction="sum")
        count = masked.sum()
        codevectors = config.num_codevectors_per_group * config.num_codevector_groups
        diversity = (codevectors - out.codevector_perplexity) / codevectors * count
        best, worst = logits.argmax(-1) == 0, logits.argmin(-1) == 0  # both: every logit equal, none told apart
        correct = (best & ~worst & masked).sum()
        return contrastive + config.diversity_loss_weight * diversity, correct, count


class Wav2Vec2Case(TrainingCase):
    target_metric = "contrastive_accuracy"

    def __init__(self, params: dict[str, Any], ctx: RunContext) -> None:
        self.p, self.ctx = params, ctx
        self.max_grad_norm = float(params["max_grad_norm"])
        self.updates = 0

    def build_model(self) -> nn.Module:
        return Wav2Vec2Pretraining(wav2vec2_config(self.p))

    def build_data(self) -> tuple[Iterable, Iterable]:
        p, ctx = self.p, self.ctx
        train, held_out = build_datasets(ctx.data_dir, p)
        kernels, strides = collate_args(wav2vec2_config(p))
        self.batches = LengthGroupedBatches(train.lengths, int(p["batch_size"]), ctx.rank,
                                            ctx.world_size, int(p["seed"]))
        workers = int(p["num_workers"])
        self.train_loader = DataLoader(train, batch_sampler=self.batches, num_workers=workers,
                                       pin_memory=ctx.pin_memory, persistent_workers=workers > 0,
                                       collate_fn=MaskingCollator(p, False, kernels, strides))
        if len(self.train_loader) == 0:
            raise ValueError(f"{len(cast(Sized, train))} training utterances are fewer than one global batch "
                             f"({p['batch_size']} x {ctx.world_size} ranks)")
        return self.train_loader, dist.eval_loader(held_out, int(p["eval_batch_size"]), ctx.rank, ctx.world_size,
                                                   pin_memory=ctx.pin_memory,
                                                   collate_fn=MaskingCollator(p, True, kernels, strides))

    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any | None]:
        """fairseq's Adam (decoupled weight decay on every parameter); linear warmup, then linear decay to 0 at
        the end (FlagPerf's lr_policy poly, power 1)."""
        p = self.p
        opt = build_optimizer(model, "adamw", float(p["lr"]), 0.0, float(p["weight_decay"]), None)
        for group in opt.param_groups:
            group["betas"], group["eps"] = (float(p["adam_beta1"]), float(p["adam_beta2"])), float(p["adam_eps"])
        total = schedule_steps(p, len(self.train_loader))
        return opt, warmup_schedule(opt, int(p["warmup_steps"]), total, decay="linear")

    def set_epoch(self, epoch: int) -> None:
        self.batches.set_epoch(epoch)

    def after_step(self, model: nn.Module) -> None:
        """The Gumbel softmax's temperature: latent_temp_start x latent_temp_decay^updates, not below
        latent_temp_min (fairseq's latent_temp)."""
        self.updates += 1
        p = self.p
        temperature = max(float(p["latent_temp_start"]) * float(p["latent_temp_decay"]) ** self.updates,
                          float(p["latent_temp_min"]))
        cast(Wav2Vec2Pretraining, model).w2v.set_gumbel_temperature(temperature)  # type: ignore[arg-type]

    def train_step(self, model: nn.Module, batch: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, int]:
        loss, _, count = model(*batch)
        return loss / count.clamp(min=1), batch[0].shape[0]

    def evaluate(self, model: nn.Module, eval_loader: Iterable) -> dict[str, float]:
        """FlagPerf's accuracy (its loss/criterion.py with infonce): the share of masked time steps whose true
        quantised latent has the highest logit of the 1 + num_negatives (and not also the lowest)."""
        device = self.ctx.device
        sums = torch.zeros(3, dtype=torch.float64, device=device)
        for batch in eval_loader:
            loss, correct, count = model(*self.to_device(batch, device))
            sums += torch.stack([loss.double(), correct.double(), count.double()])
        loss_sum, correct_sum, total = dist.all_reduce_sum(sums.tolist(), device)
        return {"contrastive_accuracy": correct_sum / max(total, 1), "eval_loss": loss_sum / max(total, 1)}


def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return Wav2Vec2Case(params, ctx)
