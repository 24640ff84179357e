"""Masking for masked-language-model training, shared by the cases that pretrain BERT-like encoders (bert, bert_hf,
longformer): the token ids of bert-uncased's WordPiece vocabulary, BERT's dynamic masking (80 % [MASK], 10 % a
random word, 10 % kept) of a fixed count of positions (bert) or of each token with a probability (longformer, as
transformers' DataCollatorForLanguageModeling), and FlagPerf bert_hf's static one ([MASK] at a fixed share of the
positions)."""

from __future__ import annotations

import torch

PAD_ID, CLS_ID, SEP_ID, MASK_ID = 0, 101, 102, 103
FIRST_WORD_ID = 999  # ids below are [PAD], [unusedN], [UNK], [CLS], [SEP], [MASK] in bert-uncased
IGNORE = -100        # label of positions that are not predicted


def mask_tokens(input_ids: torch.Tensor, attention_mask: torch.Tensor, mask_prob: float, max_predictions: int,
                vocab_size: int, generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
    """BERT masking of a batch: per sequence round(mask_prob x word tokens) positions (at most
    max_predictions), replaced by [MASK] 80%, a random word 10%, kept 10%. Returns the model inputs
    plus fixed-size `positions` (B, P) and `labels` (B, P), IGNORE where unused."""
    batch, seq_len = input_ids.shape
    words = (attention_mask > 0) & (input_ids != PAD_ID) & (input_ids != CLS_ID) & (input_ids != SEP_ID)
    count = (words.sum(1).float() * mask_prob).round().long().clamp(min=1, max=max_predictions)
    count = torch.minimum(count, words.sum(1))
    scores = torch.rand(batch, seq_len, generator=generator).masked_fill(~words, -1.0)
    positions = scores.topk(min(max_predictions, seq_len), dim=1).indices
    used = torch.arange(positions.shape[1])[None, :] < count[:, None]
    labels = torch.where(used, input_ids.gather(1, positions), IGNORE)
    action = torch.rand(positions.shape, generator=generator)
    random_words = torch.randint(FIRST_WORD_ID, vocab_size, positions.shape, generator=generator)
    original = input_ids.gather(1, positions)
    replaced = torch.where(action < 0.8, MASK_ID, torch.where(action < 0.9, random_words, original))
    masked = input_ids.clone()
    masked.scatter_(1, positions, torch.where(used, replaced, original))
    return {"input_ids": masked, "attention_mask": attention_mask, "positions": torch.where(used, positions, 0),
            "labels": labels}



def mask_static(input_ids: torch.Tensor, mask_ratio: float, generator: torch.Generator) -> torch.Tensor:
    """FlagPerf bert_hf's masking (training/benchmarks/bert_hf/pytorch/dataloaders/dataloader.py): int(mask_ratio x
    tokens) positions of a sequence, any token, replaced by [MASK], nothing random nor kept. FlagPerf draws them
    over the whole token stream once; here per sequence from `generator` (seed it per sequence: the same masks every
    epoch)."""
    ids = input_ids.clone()
    count = int(ids.shape[-1] * mask_ratio)
    ids[torch.randperm(ids.shape[-1], generator=generator)[:count]] = MASK_ID
    return ids


def mask_each(input_ids: torch.Tensor, special: torch.Tensor, mask_prob: float, mask_id: int, vocab_size: int,
              generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking as transformers' DataCollatorForLanguageModeling (torch_mask_tokens) does it, FlagPerf
    longformer's: each token not `special` chosen with probability mask_prob, then [MASK] (mask_id) 80 %, a random
    id of the vocabulary 10 %, kept 10 %. Returns (masked input ids, labels: the original id where chosen, else
    IGNORE)."""
    chosen = (torch.rand(input_ids.shape, generator=generator) < mask_prob) & ~special.bool()
    labels = torch.where(chosen, input_ids, IGNORE)
    action = torch.rand(input_ids.shape, generator=generator)
    random_ids = torch.randint(0, vocab_size, input_ids.shape, generator=generator)
    replaced = torch.where(action < 0.8, mask_id, torch.where(action < 0.9, random_ids, input_ids))
    return torch.where(chosen, replaced, input_ids), labels
