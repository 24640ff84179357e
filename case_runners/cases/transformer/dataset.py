"""FlagPerf's WMT14 en-de splits in fairseq's binarised format (memory-mapped), its dictionary, and synthetic
sentence pairs; batches are right-padded pairs with the sentence's index (the evaluation orders its outputs by it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, Sampler

from case_runners.cases.transformer.data import (
    IDX_HEADER_BYTES,
    SOURCE,
    SPECIALS,
    TARGET,
    TEST,
    TRAIN,
    read_idx_header,
    split_files,
)
from case_runners.tasks.training.seq2seq import IGNORE

PAD_ID, EOS_ID, UNK_ID = 1, 2, 3  # fairseq's Dictionary (0 is "<Lua heritage>")


def read_dictionary(path: Path) -> list[str]:
    """A fairseq dict.<lang>.txt as its symbols by id: the four specials, then "<symbol> <count>" lines in order."""
    with open(path, encoding="utf-8") as f:
        return [*SPECIALS, *(line.rstrip("\n").rpartition(" ")[0] for line in f if line.strip())]


class IndexedSentences:
    """One side of a split (fairseq's IndexedDataset: .idx offsets, .bin ids + 1), the .bin memory-mapped."""

    def __init__(self, idx: Path, data: Path) -> None:
        letter, _, count = read_idx_header(idx)
        offsets = np.fromfile(idx, dtype="<i8", offset=IDX_HEADER_BYTES, count=2 * (count + 1))
        self.starts = offsets[count + 1:]  # data_offsets, after the dim_offsets
        self.data = np.memmap(data, dtype=np.dtype(f"<{letter}"), mode="r")
        self.count = count

    def __len__(self) -> int:
        return self.count

    def lengths(self) -> np.ndarray:
        return np.diff(self.starts)

    def __getitem__(self, index: int) -> torch.Tensor:
        ids = np.asarray(self.data[self.starts[index]:self.starts[index + 1]], dtype=np.int64) - 1
        return torch.from_numpy(ids)


class SentencePairs(Dataset):
    """(source ids, target ids, index) of a split, each cut to `max_len` ids (</s> kept last)."""

    def __init__(self, root: Path, split: str, max_len: int) -> None:
        self.root, self.split, self.max_len = root, split, max_len
        self.length = len(IndexedSentences(*split_files(root, split, SOURCE)))
        self._sides: tuple[IndexedSentences, IndexedSentences] | None = None

    def __len__(self) -> int:
        return self.length

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_sides": None}

    def lengths(self) -> np.ndarray:
        """Each pair's longer side, as cut: what a batch pads to."""
        sides = [IndexedSentences(*split_files(self.root, self.split, lang)).lengths() for lang in (SOURCE, TARGET)]
        return np.minimum(np.maximum(*sides), self.max_len)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        if self._sides is None:  # each process (loader workers included) maps the files itself
            self._sides = (IndexedSentences(*split_files(self.root, self.split, SOURCE)),
                           IndexedSentences(*split_files(self.root, self.split, TARGET)))
        source, target = (cut(side[index], self.max_len) for side in self._sides)
        return source, target, index


def cut(ids: torch.Tensor, max_len: int) -> torch.Tensor:
    return ids if len(ids) <= max_len else torch.cat([ids[:max_len - 1], ids[-1:]])


class SyntheticPairs(Dataset):
    """`length` pairs cycling over a pool of 64 random ones, 4 to `max_len` word ids each, ending in </s>."""

    POOL = 64

    def __init__(self, length: int, max_len: int, vocab_size: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.pool = []
        for _ in range(min(length, self.POOL)):
            pair = []
            for _side in range(2):
                words = rng.integers(len(SPECIALS), vocab_size, int(rng.integers(3, max_len)))
                pair.append(torch.from_numpy(np.append(words, EOS_ID)))
            self.pool.append(pair)
        self.length = length

    def __len__(self) -> int:
        return self.length

    def lengths(self) -> np.ndarray:
        sides = [max(len(source), len(target)) for source, target in self.pool]
        return np.array([sides[i % len(sides)] for i in range(self.length)])

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        source, target = self.pool[index % len(self.pool)]
        return source, target, index


class TokenBatches(Sampler[list[int]]):
    """fairseq's batching (max_tokens, max_sentences): the pairs sorted by their longer side and cut into batches of
    at most max_sentences pairs whose padded size (pairs x the longest) stays within max_tokens (a longer pair is a
    batch alone); the batches shuffled each epoch, each rank an equal share (the few left over dropped)."""

    def __init__(self, lengths: np.ndarray, max_tokens: int, max_sentences: int, rank: int, world_size: int,
                 seed: int) -> None:
        self.batches: list[list[int]] = []
        batch: list[int] = []
        longest = 0
        for index in np.argsort(lengths, kind="stable").tolist():
            length = int(lengths[index])
            if batch and ((len(batch) + 1) * max(longest, length) > max_tokens or len(batch) == max_sentences):
                self.batches.append(batch)
                batch, longest = [], 0
            batch.append(index)
            longest = max(longest, length)
        if batch:
            self.batches.append(batch)
        self.rank, self.world_size, self.seed, self.epoch = rank, world_size, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return len(self.batches) // self.world_size

    def __iter__(self) -> Iterator[list[int]]:
        order = np.random.default_rng(self.seed + self.epoch).permutation(len(self.batches))
        return (self.batches[b] for b in order[self.rank::self.world_size][:len(self)])


def collate(pairs: list[tuple[torch.Tensor, torch.Tensor, int]]) -> dict[str, Any]:
    """Right-padded sources (PAD_ID) with their mask, targets as labels (IGNORE after the end), the indices, and the
    target tokens (fairseq's ntokens: a sample of this case), a number the FLOPs count's meta copy keeps."""
    width = max(len(s) for s, _, _ in pairs)
    length = max(len(t) for _, t, _ in pairs)
    input_ids = torch.full((len(pairs), width), PAD_ID, dtype=torch.long)
    labels = torch.full((len(pairs), length), IGNORE, dtype=torch.long)
    for row, (source, target, _) in enumerate(pairs):
        input_ids[row, :len(source)] = source
        labels[row, :len(target)] = target
    return {"input_ids": input_ids, "attention_mask": (input_ids != PAD_ID).long(), "labels": labels,
            "index": torch.tensor([i for _, _, i in pairs]), "ntokens": sum(len(t) for _, t, _ in pairs)}


def build_datasets(data_dir: str | None, params: dict[str, Any]) -> tuple[SentencePairs | SyntheticPairs,
                                                                         SentencePairs | SyntheticPairs]:
    """(training pairs, test pairs): FlagPerf's splits, or synthetic ones."""
    max_len = int(params["max_len"])
    if params["synthetic"]:
        seed, vocab = int(params["seed"]), int(params["vocab_size"])
        return (SyntheticPairs(int(params["synthetic_samples"]), max_len, vocab, seed),
                SyntheticPairs(int(params["eval_samples"]), max_len, vocab, seed + 1))
    assert data_dir is not None  # without synthetic, check_data_dir names a missing data_dir
    return SentencePairs(Path(data_dir), TRAIN, max_len), SentencePairs(Path(data_dir), TEST, max_len)


def vocabulary(data_dir: str) -> list[str]:
    """The target dictionary's symbols (FlagPerf's joined dictionary: the source's are the same)."""
    return read_dictionary(Path(data_dir) / f"dict.{TARGET}.txt")
