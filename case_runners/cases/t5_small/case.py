"""t5_small: T5ForConditionalGeneration (transformers, t5-small's config) fine-tuned to summarise CNN/DailyMail, as
FlagPerf's t5_small; evaluated by greedy generation (tasks/training/seq2seq.py) and ROUGE (rouge-score)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from case_runners.cases.t5_small.data import TOKENIZER_FILE, checkpoint_path
from case_runners.cases.t5_small.dataset import EOS_ID, PAD_ID, build_datasets
from case_runners.tasks.training import dist
from case_runners.tasks.training.case_api import RunContext, TrainingCase, schedule_steps, warmup_schedule
from case_runners.tasks.training.seq2seq import Decoding, generate, texts

if TYPE_CHECKING:
    from transformers import T5Config

# FlagPerf's evaluator reports these (evaluate's rouge, F-measures x 100); rougeLsum needs nltk's punkt sentence
# splitter, which is data to download, so it is left out (README.md).
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
TIED_KEYS = {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight"}  # = shared.weight


def t5_config(params: dict[str, Any]) -> T5Config:
    from transformers import T5Config

    config = T5Config(vocab_size=int(params["vocab_size"]), d_model=int(params["d_model"]),
                      d_kv=int(params["d_kv"]), d_ff=int(params["d_ff"]), num_layers=int(params["num_layers"]),
                      num_heads=int(params["num_heads"]), dropout_rate=float(params["dropout"]),
                      feed_forward_proj="relu", pad_token_id=PAD_ID, eos_token_id=EOS_ID)  # embeddings tied
    config.decoder_start_token_id = PAD_ID  # t5's: the decoder starts from <pad> (not a T5Config argument)
    return config


def load_checkpoint(model: nn.Module, path: Path) -> None:
    """t5-small's weights (FlagPerf's model/model.safetensors, transformers' names; .pt and .bin state dicts too)."""
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        state = load_file(str(path))
    else:
        state = torch.load(path, map_location="cpu", weights_only=True)
    own = model.state_dict()
    wrong = [f"{k} {tuple(v.shape)} (this config's: {tuple(own[k].shape)})" for k, v in state.items()
             if k in own and own[k].shape != v.shape]
    if wrong:
        raise ValueError(f"{path}: a T5 of another shape than this config's: {', '.join(wrong[:3])}")
    missing, _ = model.load_state_dict(state, strict=False)
    missing = [k for k in missing if k not in TIED_KEYS]
    if missing:
        raise ValueError(f"{path}: not a T5ForConditionalGeneration state dict of this config; missing {missing[:5]}")


def padding_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """The (batch, 1, 1, source_len) boolean mask (True: attend) transformers builds from a 2-D one; given built, the
    model skips its check of the mask's values, which the meta device of the FLOPs count cannot read."""
    return attention_mask[:, None, None, :].bool()


class T5SmallCase(TrainingCase):
    target_metric = "rouge1"

    def __init__(self, params: dict[str, Any], ctx: RunContext) -> None:
        self.p, self.ctx = params, ctx
        self.decoding = Decoding(max_length=int(params["max_gen_length"]), num_beams=int(params["num_beams"]))
        self._decode: Callable[[list[int]], str] | None = None

    def build_model(self) -> nn.Module:
        from transformers import T5ForConditionalGeneration

        model = T5ForConditionalGeneration(t5_config(self.p))
        checkpoint = self.p["init_checkpoint"]
        on_meta = model.shared.weight.is_meta  # the FLOPs count's copy (tasks/training/flops.py): shapes only
        if checkpoint and not self.p["synthetic"] and self.ctx.data_dir and not on_meta:
            load_checkpoint(model, checkpoint_path(self.ctx.data_dir, checkpoint))
        return model

    def build_data(self) -> tuple[Iterable, Iterable]:
        p, ctx = self.p, self.ctx
        train, held_out = build_datasets(ctx.data_dir, p)
        if not p["synthetic"] and ctx.data_dir:
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(Path(ctx.data_dir) / TOKENIZER_FILE))
            self._decode = lambda ids: tokenizer.decode(ids, skip_special_tokens=True)
        self.train_loader, eval_loader = dist.case_loaders(train, held_out, p, ctx, "training pairs")
        return self.train_loader, eval_loader

    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any | None]:
        """FlagPerf's: AdamW (torch's betas and eps), no weight decay on biases and layer norms, the learning rate
        from its peak straight down to 0 at the end of training (transformers' linear schedule, no warmup)."""
        p = self.p
        decay: list[nn.Parameter] = []
        no_decay: list[nn.Parameter] = []
        for name, w in model.named_parameters():
            (no_decay if name.endswith("bias") or "layer_norm" in name else decay).append(w)
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": float(p["weight_decay"])},
                                 {"params": no_decay, "weight_decay": 0.0}], lr=float(p["lr"]))
        total = schedule_steps(p, len(self.train_loader))
        return opt, warmup_schedule(opt, int(p["warmup_steps"]), total, decay="linear")

    def set_epoch(self, epoch: int) -> None:
        dist.set_sampler_epoch(self.train_loader, epoch)

    def train_step(self, model: nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, int]:
        out = model(input_ids=batch["input_ids"], attention_mask=padding_mask(batch["attention_mask"]),
                    labels=batch["labels"])
        return out.loss, batch["input_ids"].shape[0]

    def evaluate(self, model: nn.Module, eval_loader: Iterable) -> dict[str, float]:
        """ROUGE F-measures (x 100) of the greedy summaries against the references, averaged over the pairs of
        every rank (the mean the bootstrap of FlagPerf's `evaluate` rouge centres on)."""
        from rouge_score.rouge_scorer import RougeScorer

        scorer = RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
        sums = [0.0] * len(ROUGE_TYPES)
        count = 0
        special = (PAD_ID, EOS_ID)
        for batch in eval_loader:
            batch = self.to_device(batch, self.ctx.device)
            generated = generate(model, batch["input_ids"], batch["attention_mask"], self.decoding)
            summaries = texts(generated, special, self._decode)
            for reference, summary in zip(texts(batch["labels"], special, self._decode), summaries):
                scores = scorer.score(reference, summary)
                sums = [s + scores[kind].fmeasure for s, kind in zip(sums, ROUGE_TYPES)]
                count += 1
        *totals, pairs = dist.all_reduce_sum([*sums, float(count)], self.ctx.device)
        return {kind: 100 * total / max(pairs, 1) for kind, total in zip(ROUGE_TYPES, totals)}


def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return T5SmallCase(params, ctx)
