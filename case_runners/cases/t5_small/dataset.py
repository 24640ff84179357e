"""FlagPerf's t5_small .npz splits (memory-mapped) and synthetic article/summary pairs of their shapes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from case_runners.cases.bert.dataset import load_npz_array
from case_runners.cases.npy_header import npz_arrays
from case_runners.cases.t5_small.data import EVAL_FILE, TRAIN_FILE
from case_runners.tasks.training.seq2seq import IGNORE

PAD_ID, EOS_ID = 0, 1  # t5-small's <pad> (also the decoder's start) and </s>
FIRST_WORD_ID, SENTINELS = 3, 100  # ids below are <pad>, </s>, <unk>; the vocabulary's last 100 are <extra_id_N>
FIELDS = ("input_ids", "attention_mask", "labels")


class SummaryPairs(Dataset):
    """The rows of one of FlagPerf's .npz splits; each process (loader workers included) maps the file itself."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows = npz_arrays(path)["input_ids"].shape[0]
        self._arrays: list[np.ndarray] | None = None

    def __len__(self) -> int:
        return self.rows

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_arrays": None}

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        if self._arrays is None:
            self._arrays = [load_npz_array(self.path, name) for name in FIELDS]
        return {name: torch.from_numpy(np.array(a[index], dtype=np.int64)) for name, a in zip(FIELDS, self._arrays)}


class SyntheticPairs(Dataset):
    """`length` pairs cycling over a pool of 64 random ones: a full article of word ids, a summary of random length
    ending in </s>, padded with IGNORE as FlagPerf's labels are."""

    POOL = 64

    def __init__(self, length: int, source_len: int, target_len: int, vocab_size: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        high = max(FIRST_WORD_ID + 1, vocab_size - SENTINELS)
        pool = min(length, self.POOL)
        self.input_ids = torch.from_numpy(rng.integers(FIRST_WORD_ID, high, (pool, source_len)))
        labels = rng.integers(FIRST_WORD_ID, high, (pool, target_len))
        ends = rng.integers(max(1, target_len // 2), target_len, pool)  # </s> at a position in the second half
        for row, end in enumerate(ends):
            labels[row, end], labels[row, end + 1:] = EOS_ID, IGNORE
        self.labels = torch.from_numpy(labels)
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        row = index % len(self.input_ids)
        return {"input_ids": self.input_ids[row], "attention_mask": torch.ones_like(self.input_ids[row]),
                "labels": self.labels[row]}


def build_datasets(data_dir: str | None, params: dict[str, Any]) -> tuple[Dataset, Dataset]:
    """(training pairs, held-out pairs): FlagPerf's splits, or synthetic ones."""
    if params["synthetic"]:
        shape = (int(params["source_len"]), int(params["target_len"]), int(params["vocab_size"]))
        seed = int(params["seed"])
        return (SyntheticPairs(int(params["synthetic_samples"]), *shape, seed),
                SyntheticPairs(int(params["eval_samples"]), *shape, seed + 1))
    assert data_dir is not None  # without synthetic, check_data_dir names a missing data_dir
    return SummaryPairs(Path(data_dir) / TRAIN_FILE), SummaryPairs(Path(data_dir) / EVAL_FILE)
