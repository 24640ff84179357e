"""transformer: FlagPerf's Transformer-big for WMT14 en-de (fairseq's transformer_wmt_en_de_big_t2t) as a
transformers MarianMTModel of the same size, trained from scratch; evaluated by beam search (tasks/training/seq2seq.py)
and BLEU (sacrebleu) on newstest2014. A sample is one target token (fairseq's ntokens, FlagPerf's throughput unit)."""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader

from case_runners.cases.transformer.data import REFERENCES
from case_runners.cases.transformer.dataset import EOS_ID, PAD_ID, TokenBatches, build_datasets, collate, vocabulary
from case_runners.tasks.training import dist
from case_runners.tasks.training.case_api import RunContext, TrainingCase
from case_runners.tasks.training.seq2seq import IGNORE, Decoding, generate, texts

if TYPE_CHECKING:
    from transformers import MarianConfig

BPE_SEPARATOR = "@@ "  # subword-nmt's continuation mark (FlagPerf's remove_bpe)
MAX_POSITIONS = 1024  # fairseq's max_source_positions and max_target_positions


def marian_config(params: dict[str, Any]) -> MarianConfig:
    from transformers import MarianConfig

    width, layers, heads = int(params["d_model"]), int(params["num_layers"]), int(params["num_heads"])
    ffn, dropout = int(params["ffn_dim"]), float(params["dropout"])
    return MarianConfig(vocab_size=int(params["vocab_size"]), d_model=width, encoder_layers=layers,
                        decoder_layers=layers, encoder_attention_heads=heads, decoder_attention_heads=heads,
                        encoder_ffn_dim=ffn, decoder_ffn_dim=ffn, activation_function="relu", dropout=dropout,
                        attention_dropout=dropout, activation_dropout=dropout,
                        max_position_embeddings=MAX_POSITIONS, scale_embedding=True,
                        share_encoder_decoder_embeddings=True, pad_token_id=PAD_ID, eos_token_id=EOS_ID,
                        decoder_start_token_id=EOS_ID, forced_eos_token_id=None)


def inverse_sqrt(optimizer: torch.optim.Optimizer, warmup_steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """fairseq's inverse_sqrt: linear from 0 to lr over warmup_steps, then lr x sqrt(warmup_steps / step)."""
    def factor(step: int) -> float:
        step += 1
        return step / warmup_steps if step < warmup_steps else math.sqrt(max(warmup_steps, 1) / step)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def detokenize(text: str) -> str:
    """A hypothesis as FlagPerf scores it, without its subword marks and Moses' escapes: BPE pieces joined, the
    aggressive hyphen split (" @-@ ") undone and HTML entities unescaped; sacrebleu's 13a tokenizer then splits
    punctuation in hypotheses and references alike (README.md)."""
    text = (text + " ").replace(BPE_SEPARATOR, "").rstrip()
    return html.unescape(text.replace(" @-@ ", "-"))


def masks(batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """The (batch, 1, 1, source) padding mask and the (1, 1, target, target) causal mask transformers builds (True:
    attend); given built, the model skips its checks of the masks' values, which the FLOPs count's meta device cannot
    read."""
    length = batch["labels"].shape[1]
    causal = torch.ones(length, length, dtype=torch.bool, device=batch["labels"].device).tril()
    return batch["attention_mask"][:, None, None, :].bool(), causal[None, None]


class TransformerCase(TrainingCase):
    target_metric = "bleu"

    def __init__(self, params: dict[str, Any], ctx: RunContext) -> None:
        self.p, self.ctx = params, ctx
        self.label_smoothing = float(params["label_smoothing"])
        self.decoding = Decoding(max_length=int(params["max_gen_length"]), num_beams=int(params["num_beams"]),
                                 length_penalty=float(params["length_penalty"]))
        self.symbols: list[str] | None = None
        self.references: list[str] | None = None

    def build_model(self) -> nn.Module:
        from transformers import MarianMTModel

        return MarianMTModel(marian_config(self.p))

    def build_data(self) -> tuple[Iterable, Iterable]:
        p, ctx = self.p, self.ctx
        train, held_out = build_datasets(ctx.data_dir, p)
        if not p["synthetic"] and ctx.data_dir:
            self.symbols = vocabulary(ctx.data_dir)
            self.references = (Path(ctx.data_dir) / REFERENCES).read_text(encoding="utf-8").splitlines()
        self.batches = TokenBatches(train.lengths(), int(p["max_tokens"]), int(p["batch_size"]), ctx.rank,
                                    ctx.world_size, int(p["seed"]))
        if len(self.batches) == 0:
            raise ValueError(f"{len(train)} training pairs make {len(self.batches.batches)} batches of at most "
                             f"{p['max_tokens']} tokens, fewer than one a rank ({ctx.world_size} ranks)")
        workers = int(p["num_workers"])
        self.train_loader = DataLoader(train, batch_sampler=self.batches, num_workers=workers,
                                       pin_memory=ctx.pin_memory, collate_fn=collate, persistent_workers=workers > 0)
        return self.train_loader, dist.eval_loader(held_out, int(p["eval_batch_size"]), ctx.rank, ctx.world_size,
                                                   pin_memory=ctx.pin_memory, collate_fn=collate)

    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any | None]:
        """FlagPerf's: Adam (β 0.9/0.997, ε 1e-9), no weight decay, fairseq's inverse-square-root schedule."""
        p = self.p
        opt = torch.optim.Adam(model.parameters(), lr=float(p["lr"]), betas=(float(p["adam_beta1"]),
                               float(p["adam_beta2"])), eps=float(p["adam_eps"]), weight_decay=float(p["weight_decay"]))
        return opt, inverse_sqrt(opt, int(p["warmup_steps"]))

    def set_epoch(self, epoch: int) -> None:
        self.batches.set_epoch(epoch)

    def train_step(self, model: nn.Module, batch: dict[str, Any]) -> tuple[torch.Tensor, int]:
        """Label-smoothed cross-entropy over the target tokens (fairseq's label_smoothed_cross_entropy, mean per
        token); the decoder reads the target shifted right after </s>, as fairseq's prev_output_tokens."""
        from transformers.models.marian.modeling_marian import shift_tokens_right

        labels = batch["labels"]
        source_mask, causal = masks(batch)
        logits = model(input_ids=batch["input_ids"], attention_mask=source_mask,
                       decoder_input_ids=shift_tokens_right(labels, PAD_ID, EOS_ID),
                       decoder_attention_mask=causal, use_cache=False).logits
        loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(), ignore_index=IGNORE,
                               label_smoothing=self.label_smoothing)
        return loss, int(batch["ntokens"])

    def _text(self, ids: list[int]) -> str:
        assert self.symbols is not None
        return detokenize(" ".join(self.symbols[i] if i < len(self.symbols) else "<unk>" for i in ids))

    def evaluate(self, model: nn.Module, eval_loader: Iterable) -> dict[str, float]:
        """Corpus BLEU (sacrebleu, lowercased as FlagPerf's test_cased_bleu false) of the beam-searched translations
        of every rank against the raw references, in the test split's order."""
        import sacrebleu

        decode = self._text if self.symbols is not None else None
        special = (PAD_ID, EOS_ID)
        translated: list[tuple[int, str, str]] = []
        for batch in eval_loader:
            batch = self.to_device(batch, self.ctx.device)
            generated = generate(model, batch["input_ids"], batch["attention_mask"], self.decoding)
            hypotheses = texts(generated, special, decode)
            indices = batch["index"].tolist()
            references = ([self.references[i] for i in indices] if self.references is not None
                          else texts(batch["labels"], special, None))
            translated += zip(indices, hypotheses, references)
        pairs = sorted(pair for rank_pairs in dist.gather_objects(translated) for pair in rank_pairs)
        bleu = sacrebleu.corpus_bleu([h for _, h, _ in pairs], [[r for _, _, r in pairs]], lowercase=True)
        return {"bleu": float(bleu.score), "sentences": float(len(pairs))}


def build_case(params: dict[str, Any], ctx: RunContext) -> TrainingCase:
    return TransformerCase(params, ctx)
