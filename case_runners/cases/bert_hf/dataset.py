"""FlagPerf bert_hf's data (data.py): a flat .npy token stream, memory-mapped, cut into sequences, each masked
statically (case_runners/cases/mlm.py mask_static); and a synthetic stream for measuring compute."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import numpy as np
import torch
from torch.utils.data import Dataset

from case_runners.cases.bert_hf.data import check_data_dir
from case_runners.cases.mlm import FIRST_WORD_ID, mask_static
from case_runners.cases.npy_header import read_npy_header


class MaskedStream(Dataset):
    """Sequences of seq_len tokens of a flat stream (the remainder dropped): (input_ids with [MASK] at
    int(mask_ratio x seq_len) positions, the original ids as labels). A sequence's masks depend on the seed and its
    index only: the same every epoch and on every rank, as FlagPerf's, masked once when loaded."""

    def __init__(self, tokens: Path | np.ndarray, seq_len: int, mask_ratio: float, seed: int) -> None:
        self.source, self.seq_len, self.mask_ratio, self.seed = tokens, seq_len, mask_ratio, seed
        self.tokens: np.ndarray | None = None if isinstance(tokens, Path) else tokens
        if isinstance(tokens, Path):
            with open(tokens, "rb") as f:
                self.length = read_npy_header(f).shape[0]
        else:
            self.length = len(tokens)

    def __len__(self) -> int:
        return self.length // self.seq_len

    def __getstate__(self) -> dict:
        """A file's stream is memory-mapped again by each process that reads it (data loader workers), not pickled."""
        return {**self.__dict__, "tokens": None} if isinstance(self.source, Path) else self.__dict__

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.tokens is None:
            self.tokens = np.load(cast(Path, self.source), mmap_mode="r")
        start = index * self.seq_len
        labels = torch.as_tensor(np.array(self.tokens[start:start + self.seq_len], dtype=np.int64))  # a copy
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        return mask_static(labels, self.mask_ratio, generator), labels


def build_datasets(data_dir: str | None, params: dict) -> tuple[Dataset, Dataset]:
    """(training set, held-out set): FlagPerf's two .npy streams under data_dir, or random word ids."""
    seq_len, ratio, seed = int(params["seq_len"]), float(params["mask_ratio"]), int(params["seed"])
    if params["synthetic"]:
        g = torch.Generator().manual_seed(seed)
        vocab = int(params["vocab_size"])
        streams = [torch.randint(FIRST_WORD_ID, vocab, (int(params[key]) * seq_len,), generator=g).numpy()
                   for key in ("synthetic_samples", "eval_samples")]
        return MaskedStream(streams[0], seq_len, ratio, seed), MaskedStream(streams[1], seq_len, ratio, seed + 1)
    problems = check_data_dir(data_dir, params)
    if problems:
        raise ValueError("; ".join(problems))
    assert data_dir is not None  # without synthetic, check_data_dir names a missing data_dir
    train, held_out = (Path(data_dir) / str(params[key]) for key in ("datafilename", "valdatafilename"))
    return MaskedStream(train, seq_len, ratio, seed), MaskedStream(held_out, seq_len, ratio, seed + 1)
