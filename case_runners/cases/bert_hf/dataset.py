"""FlagPerf bert_hf's data (data.py): a flat .npy token stream, memory-mapped, cut into sequences, each masked
statically (case_runners/cases/mlm.py mask_static); and a synthetic stream for measuring compute."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from case_runners.cases.bert_hf.data import check_data_dir
from case_runners.cases.mlm import FIRST_WORD_ID, mask_static


class MaskedStream(Dataset):
    """Sequences of seq_len tokens of a flat stream (the remainder dropped): (input_ids with [MASK] at
    int(mask_ratio x seq_len) positions, the original ids as labels). A sequence's masks depend on the seed and its
    index only: the same every epoch and on every rank, as FlagPerf's, masked once when loaded."""

    def __init__(self, tokens: np.ndarray | torch.Tensor, seq_len: int, mask_ratio: float, seed: int) -> None:
        self.tokens, self.seq_len, self.mask_ratio, self.seed = tokens, seq_len, mask_ratio, seed

    def __len__(self) -> int:
        return len(self.tokens) // self.seq_len

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        start = index * self.seq_len
        labels = torch.as_tensor(np.asarray(self.tokens[start:start + self.seq_len], dtype=np.int64))
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        return mask_static(labels, self.mask_ratio, generator), labels


def build_datasets(data_dir: str | None, params: dict) -> tuple[Dataset, Dataset]:
    """(training set, held-out set): FlagPerf's two .npy streams under data_dir, or random word ids."""
    seq_len, ratio, seed = int(params["seq_len"]), float(params["mask_ratio"]), int(params["seed"])
    if params["synthetic"]:
        g = torch.Generator().manual_seed(seed)
        vocab = int(params["vocab_size"])
        streams = [torch.randint(FIRST_WORD_ID, vocab, (int(params[key]) * seq_len,), generator=g)
                   for key in ("synthetic_samples", "eval_samples")]
        return MaskedStream(streams[0], seq_len, ratio, seed), MaskedStream(streams[1], seq_len, ratio, seed + 1)
    problems = check_data_dir(data_dir, params)
    if problems:
        raise ValueError("; ".join(problems))
    assert data_dir is not None  # without synthetic, check_data_dir names a missing data_dir
    train, held_out = (np.load(Path(data_dir) / str(params[key]), mmap_mode="r")
                       for key in ("datafilename", "valdatafilename"))
    return MaskedStream(train, seq_len, ratio, seed), MaskedStream(held_out, seq_len, ratio, seed + 1)
