"""FlagPerf longformer's data (data.py): .npz files of token sequences, memory-mapped, masked on the fly for
training and once, with a fixed seed, for evaluation (case_runners/cases/mlm.py mask_each); and synthetic
sequences for measuring compute."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset, TensorDataset

from case_runners.cases.bert.dataset import load_npz_array
from case_runners.cases.longformer.data import ARRAYS, SPLITS, check_data_dir
from case_runners.cases.mlm import mask_each
from case_runners.cases.npy_header import npz_arrays

BOS_ID, EOS_ID, FIRST_WORD_ID = 0, 2, 3  # RoBERTa's <s>, </s>; the ids below 3 are <s>, <pad>, </s>


class Sequences(Dataset):
    """Rows of one FlagPerf .npz: (input_ids, attention_mask, special_tokens_mask), the arrays opened
    (memory-mapped) by each process that reads them, data loader workers included, never pickled."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._arrays: list[np.ndarray] | None = None
        self.rows = npz_arrays(path)["input_ids"].shape[0]

    def __len__(self) -> int:
        return self.rows

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_arrays": None}

    def __getitem__(self, index: int) -> tuple[torch.Tensor, ...]:
        if self._arrays is None:
            self._arrays = [load_npz_array(self.path, name) for name in ARRAYS]
        return tuple(torch.from_numpy(np.array(a[index], dtype=np.int64)) for a in self._arrays)


class SyntheticSequences(Dataset):
    """`length` sequences cycling over a pool of random word ids between <s> and </s>."""

    def __init__(self, length: int, seq_len: int, vocab_size: int, seed: int, pool: int = 64) -> None:
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(FIRST_WORD_ID, vocab_size - 1, (pool, seq_len), generator=g)
        self.ids[:, 0], self.ids[:, -1] = BOS_ID, EOS_ID
        self.special = torch.zeros_like(self.ids)
        self.special[:, 0] = self.special[:, -1] = 1
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, ...]:
        i = index % len(self.ids)
        return self.ids[i], torch.ones_like(self.ids[i]), self.special[i]


class MaskingCollator:
    """Stacks samples and masks them anew every time: {input_ids, attention_mask, labels}."""

    def __init__(self, params: dict, generator: torch.Generator | None = None) -> None:
        self.mask_prob, self.mask_id = float(params["mask_prob"]), int(params["mask_token_id"])
        self.vocab_size, self.generator = int(params["vocab_size"]), generator

    def __call__(self, samples: list[tuple[torch.Tensor, ...]]) -> dict[str, torch.Tensor]:
        ids, attention, special = (torch.stack(x) for x in zip(*samples))
        masked, labels = mask_each(ids, special, self.mask_prob, self.mask_id, self.vocab_size, self.generator)
        return {"input_ids": masked, "attention_mask": attention, "labels": labels}


def fixed_eval_set(dataset: Dataset, params: dict) -> TensorDataset:
    """Every held-out sequence, masked once with the seed: the same masks at every evaluation (FlagPerf's collator
    draws new ones each time)."""
    batch = MaskingCollator(params, torch.Generator().manual_seed(int(params["seed"])))(
        [dataset[i] for i in range(len(dataset))])  # type: ignore[arg-type]
    return TensorDataset(batch["input_ids"], batch["attention_mask"], batch["labels"])


def build_datasets(data_dir: str | None, params: dict) -> tuple[Dataset, TensorDataset]:
    """(training set, fixed eval set): FlagPerf's .npz files under data_dir, or synthetic sequences."""
    if params["synthetic"]:
        seq_len, vocab, seed = int(params["seq_len"]), int(params["vocab_size"]), int(params["seed"])
        held_out = SyntheticSequences(int(params["eval_samples"]), seq_len, vocab, seed + 1)
        return SyntheticSequences(int(params["synthetic_samples"]), seq_len, vocab, seed), \
            fixed_eval_set(held_out, params)
    problems = check_data_dir(data_dir, params)
    if problems:
        raise ValueError("; ".join(problems))
    assert data_dir is not None  # without synthetic, check_data_dir names a missing data_dir
    return (Sequences(Path(data_dir) / SPLITS["train"]),
            fixed_eval_set(Sequences(Path(data_dir) / SPLITS["eval"]), params))
