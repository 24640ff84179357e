"""SST-2 as FlagPerf's distilbert case stores it (data.py): .npz files, memory-mapped, one sample a row; and
synthetic sentences for measuring compute."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from case_runners.cases.bert.dataset import load_npz_array
from case_runners.cases.distilbert.data import SPLITS, check_data_dir
from case_runners.cases.mlm import CLS_ID, FIRST_WORD_ID, SEP_ID  # bert-uncased's ids, distilbert-base-uncased's


class SentenceSet(Dataset):
    """Rows of one FlagPerf .npz: {input_ids, attention_mask, labels}; ValueError naming the file when a label is
    not a class. The token arrays are opened (memory-mapped) by each process that reads them, data loader workers
    included, never pickled."""

    def __init__(self, path: Path, num_classes: int) -> None:
        self.path = path
        self._arrays: list[np.ndarray] | None = None
        self.labels = np.asarray(load_npz_array(path, "label"), dtype=np.int64)
        outside = self.labels[(self.labels < 0) | (self.labels >= num_classes)]
        if outside.size:
            raise ValueError(f"{path}: 'label' has {outside.size} value(s) outside 0..{num_classes - 1} "
                             f"(e.g. {int(outside[0])}); num_classes is {num_classes}")

    def __len__(self) -> int:
        return len(self.labels)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_arrays": None}

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        if self._arrays is None:
            self._arrays = [load_npz_array(self.path, name) for name in ("input_ids", "attention_mask")]
        ids, mask = (torch.from_numpy(np.array(a[index], dtype=np.int64)) for a in self._arrays)
        return {"input_ids": ids, "attention_mask": mask, "labels": torch.tensor(int(self.labels[index]))}


class SyntheticSentences(Dataset):
    """`length` sentences cycling over a pool of random ones ([CLS] words [SEP], padded to seq_len) with random
    labels: the real shapes, nothing to learn."""

    def __init__(self, length: int, seq_len: int, vocab_size: int, num_classes: int, seed: int,
                 pool: int = 256) -> None:
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(FIRST_WORD_ID, vocab_size, (pool, seq_len), generator=g)
        words = torch.randint(1, seq_len - 1, (pool,), generator=g)
        self.mask = (torch.arange(seq_len)[None, :] <= words[:, None] + 1).long()
        self.ids[:, 0] = CLS_ID
        self.ids.scatter_(1, words[:, None] + 1, SEP_ID)
        self.ids *= self.mask
        self.labels = torch.randint(0, num_classes, (pool,), generator=g)
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        i = index % len(self.ids)
        return {"input_ids": self.ids[i], "attention_mask": self.mask[i], "labels": self.labels[i]}


def build_datasets(data_dir: str | None, params: dict) -> tuple[Dataset, Dataset]:
    """(training set, eval set): FlagPerf's SST-2 files under data_dir, or synthetic sentences."""
    classes = int(params["num_classes"])
    if params["synthetic"]:
        seq_len, vocab, seed = int(params["seq_len"]), int(params["vocab_size"]), int(params["seed"])
        return (SyntheticSentences(int(params["synthetic_samples"]), seq_len, vocab, classes, seed),
                SyntheticSentences(int(params["eval_samples"]), seq_len, vocab, classes, seed + 1))
    problems = check_data_dir(data_dir, params)
    if problems:
        raise ValueError("; ".join(problems))
    assert data_dir is not None  # without synthetic, check_data_dir names a missing data_dir
    return (SentenceSet(Path(data_dir) / SPLITS["train"], classes),
            SentenceSet(Path(data_dir) / SPLITS["eval"], classes))
